//! A mixed chain whose repeated level is read optimistically (`optimistic Volume, optimistic
//! Dir*, File`): one blocking body (`__descend`, given the `Blocking` or `Deadline` strategy,
//! as a fixed chain's), whose passes read the optimistic levels and walk the repeated one
//! (`__private::repeat`), then the locked levels; `descend*` and `run*` are thin wrappers,
//! `descend_keys*` and `run_keys*` wrappers of those. Blocking flavors only.

use super::super::super::validate::Mode;
use super::super::flavor::{Flavor, recording_branches};
use super::super::keys::key_stages;
use super::super::optimistic::{End, level_at, optimistic_levels, passes};
use super::super::{Docs, LevelCode, Signature, literal, method_ident};
use super::Mixed;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

impl Mixed<'_, '_> {
    /// The repeated level's `step`: `FnMut` on the repetition's data and the epoch guard (it
    /// may run once per pass), lending the child it descends into.
    pub(super) fn optimistic_step(&self) -> TokenStream {
        let repeated = &self.levels[self.repeated];
        let (ty, lock) = (repeated.ty, &repeated.lock);
        quote! {
            impl for<'__g> __cl::FnMut(&'__g #ty, usize, &'__g __cl::EpochGuard)
                -> __cl::WalkStep<&'__g __cl::Arc<#lock>>
        }
    }

    /// The stages in the order the methods take them: `stage0..`, `step`, `stage{r}..`.
    fn stage_args(&self) -> Vec<proc_macro2::Ident> {
        let mut args: Vec<_> = self
            .levels
            .windows(2)
            .map(|pair| format_ident!("stage{}", pair[0].index))
            .collect();
        args.insert(self.repeated, format_ident!("step"));
        args
    }

    /// The one body of the blocking flavors (`__descend`): the passes over the optimistic
    /// levels, which end holding the first locked level, then the locked levels hand over
    /// hand, each numbered below the repetitions (`__depth`).
    pub(super) fn optimistic_body(&self, vis: &TokenStream) -> TokenStream {
        let (levels, r) = (self.levels, self.repeated);
        let optimistic = optimistic_levels(levels);
        let leaf = levels
            .last()
            .expect("validated: the repeated level is not the leaf");
        let generics = levels.iter().map(|level| &level.lock);
        let mut params = vec![{
            let root_lock = &levels[0].lock;
            quote!(root: &__cl::Arc<#root_lock>)
        }];
        for pair in levels.windows(2) {
            let (parent, child) = (&pair[0], &pair[1]);
            if parent.index == r {
                let step = self.optimistic_step();
                params.push(quote!(step: #step));
            }
            let stage = format_ident!("stage{}", parent.index);
            let stage_type = parent.stage_type(child, true);
            params.push(quote!(#stage: #stage_type));
        }
        let repeated_lock = &levels[r].lock;
        let mut bounds: Vec<TokenStream> = levels.iter().map(LevelCode::body_bound).collect();
        bounds.push(quote!(<#repeated_lock as __cl::OptimisticLock>::Target: __cl::ChainNode));
        let first = &levels[optimistic];
        let taken_as = if first.index == leaf.index {
            quote!(__hold)
        } else {
            quote!(__cl::Kept)
        };
        let passes = passes(levels, optimistic, Some(r), &End::Take(taken_as));
        let (first_guard, first_held) = (&first.guard, &first.held);
        let first_mut =
            (first.index < leaf.index && first.mode != Mode::Shared).then(|| quote!(mut));
        let steps = (optimistic + 1 < levels.len())
            .then(|| quote!(let __s = __cl::Steps(__w, __rec, &__CL_LEVELS);));
        let locked = levels[optimistic + 1..].iter().map(|level| {
            let parent = &levels[level.index - 1];
            let (stage, borrow) = (
                format_ident!("stage{}", parent.index),
                parent.borrow_guard(),
            );
            let at = level_at(level.index, Some(r));
            let (guard, held, step, declared) = (
                &level.guard,
                &level.held,
                level.step_at(),
                literal(level.index),
            );
            let taken_as = if level.index == leaf.index {
                quote!(__hold)
            } else {
                quote!(__cl::Kept)
            };
            let guard_mut =
                (level.index < leaf.index && level.mode != Mode::Shared).then(|| quote!(mut));
            let (parent_guard, parent_held) = (&parent.guard, &parent.held);
            quote! {
                let __next = __cl::found(#stage(#borrow), #at)?;
                let (#guard_mut #guard, #held) = __s.#step(#taken_as, &__next, #at, #declared)?;
                __cl::release_as(__rec, #parent_guard, #parent_held);
                (&__cl::ClosedProbe(&*#guard, #at)).open()?;
            }
        });
        let (leaf_guard, leaf_held) = (&leaf.guard, &leaf.held);
        let body = recording_branches(
            Flavor::Blocking,
            None,
            &quote! {
                let (#first_mut #first_guard, #first_held, __depth) = #passes?;
                #steps
                #(#locked)*
                __cl::Ok(__hold.out(#leaf_guard, #leaf_held))
            },
        );
        let (wait, lock) = (leaf.wait_trait(), &leaf.lock);
        quote! {
            __cl::tracked! {
                #[doc(hidden)]
                #[inline]
                #vis fn __descend<__W: __cl::Wait, __H: __cl::Hold, #(#generics: ?__cl::Sized),*>(
                    &self, __w: __W, __hold: __H, #(#params),*
                ) -> __cl::Res<__H::Out<<__W as #wait<#lock>>::Guard>>
                where
                    __cl::Exit: __cl::From<__W::Error>,
                    __cl::Stop: __cl::From<__W::Error>,
                    #(#bounds,)*
                {
                    #body
                }
            }
        }
    }

    /// `descend*` (`hold`: `Unheld`, the leaf's guard returned) or `run*` (`Kept`, then `leaf`
    /// on it): a call of the body with the flavor's strategy.
    pub(super) fn optimistic_wrapper(
        &self,
        vis: &TokenStream,
        docs: &Docs,
        run: bool,
    ) -> TokenStream {
        let Docs { summary, krate } = docs;
        let Signature {
            mut generics,
            mut params,
            bounds,
            ..
        } = self.closure_signature();
        let leaf = self.levels.last().expect("validated");
        let strategy = if self.flavor.has_deadline() {
            quote!(deadline)
        } else {
            quote!(__cl::Blocking)
        };
        let stages = self.stage_args();
        let descend = method_ident("descend", self.flavor);
        let (name, output, body, doc) = if run {
            let reference = leaf.reference();
            generics.push(quote!(__R));
            params.push(quote!(leaf: impl __cl::FnOnce(#reference) -> __R));
            let (guard, held, borrow) = (&leaf.guard, &leaf.held, leaf.borrow_guard());
            let mutability = (leaf.mode != Mode::Shared).then(|| quote!(mut));
            (
                method_ident("run", self.flavor),
                quote!(__R),
                // The record binds after the guard, so it drops first.
                quote! {
                    let (#mutability #guard, #held) =
                        self.__descend(#strategy, __cl::Kept, root, #(#stages),*)?;
                    __cl::Ok(leaf(#borrow))
                },
                format!(
                    "Like [`{descend}`](Self::{descend}), then runs `leaf` on the leaf and \
                     releases it."
                ),
            )
        } else {
            (
                descend.clone(),
                leaf.guard_type(self.flavor),
                quote!(self.__descend(#strategy, __cl::Unheld, root, #(#stages),*)),
                format!(
                    "Locks {summary} hand over hand and returns the leaf's owned guard{}. The \
                     optimistic levels are read, not locked (the guide's [Optimistic \
                     levels](macro@{krate}::chain_locker#optimistic-levels)); the repeated one \
                     is walked by `step`, which answers at each repetition (its depth, 0 for the \
                     first) a [`Step`]({krate}::walk::Step) lending the child: `Descend` into \
                     it, `Target` (it is the last repetition), stop `Here`, or `Absent`; the \
                     stage after it runs on the last repetition. The stages of the optimistic \
                     levels and `step` may run once per pass, their answers used once the level \
                     validates. Levels are numbered from the root, repetitions included, in \
                     every [`Exit`]({krate}::Exit).",
                    if self.flavor.has_deadline() {
                        ", or `Exit::TimedOut` for a lock not taken by `deadline`"
                    } else {
                        ""
                    }
                ),
            )
        };
        self.flavor.tracked(quote! {
            #[doc = #doc]
            #[inline]
            #vis fn #name<#(#generics),*>(&self, #(#params),*) -> __cl::Res<#output>
            where
                #(#bounds,)*
            {
                #body
            }
        })
    }

    /// `descend_keys*` or `run_keys*`: `descend*` or `run*` with a key lookup per stage and
    /// the repeated level walked along `keys`, whose iterator is cloned at each pass (a pass
    /// that restarts reads the path again from its start).
    pub(super) fn optimistic_keys(&self, vis: &TokenStream, docs: &Docs, run: bool) -> TokenStream {
        let Docs { summary, .. } = docs;
        let (levels, r) = (self.levels, self.repeated);
        let (
            Signature {
                mut generics,
                mut params,
                mut bounds,
                ..
            },
            _,
        ) = self.keys_signature();
        let keyed = self.keyed_levels();
        let root_lock = &levels[0].lock;
        let repeated = &keyed[r];
        let ty = repeated.ty;
        let key = quote!(__cl::KeyOf<#root_lock, #ty, #ty>);
        bounds.extend([
            quote!(#root_lock: __cl::LinkRef<#ty, #ty>),
            quote!(<__I as __cl::IntoIterator>::IntoIter: __cl::Clone),
        ]);
        let step = quote! {
            |__node, __depth, __pin| {
                if __depth == 0 {
                    __path = __cl::Clone::clone(&__keys);
                }
                match __cl::Iterator::next(&mut __path) {
                    __cl::None => __cl::WalkStep::Here,
                    __cl::Some(__key) => __cl::walk_child(<#root_lock as __cl::LinkRef<#ty, #ty>>::child_ref(
                        __node,
                        <<__I as __cl::IntoIterator>::Item as __cl::Borrow<#key>>::borrow(&__key),
                        __pin,
                    )),
                }
            }
        };
        let mut stages = key_stages(levels);
        stages.insert(r, step);
        let deadline = self.flavor.has_deadline().then(|| quote!(deadline,));
        let descend = method_ident("descend", self.flavor);
        let (name, output, call, doc) = if run {
            let leaf = keyed.last().expect("validated");
            let reference = leaf.reference();
            generics.push(quote!(__R));
            params.push(quote!(leaf: impl __cl::FnOnce(#reference) -> __R));
            let run = method_ident("run", self.flavor);
            (
                method_ident("run_keys", self.flavor),
                quote!(__R),
                quote!(self.#run(root, #deadline #(#stages,)* leaf)),
                format!(
                    "Like [`{descend}_keys`](Self::{descend}_keys): locks {summary}, runs `leaf` \
                     on the leaf and releases it."
                ),
            )
        } else {
            (
                method_ident("descend_keys", self.flavor),
                self.leaf_guard(&keyed),
                quote!(self.#descend(root, #deadline #(#stages),*)),
                format!(
                    "Like [`{descend}`](Self::{descend}), each stage a key lookup and the \
                     repeated level walked along `keys` (one key per further repetition; none \
                     stops at the first; its iterator is cloned at each pass, so it must be \
                     `Clone`): locks {summary} and returns the leaf's owned guard."
                ),
            )
        };
        self.flavor.tracked(quote! {
            #[doc = #doc]
            #[inline]
            #vis fn #name<#(#generics),*>(&self, #(#params),*) -> __cl::Res<#output>
            where
                #(#bounds,)*
            {
                let __keys = __cl::IntoIterator::into_iter(keys);
                let mut __path = __cl::Clone::clone(&__keys);
                #call
            }
        })
    }
}
