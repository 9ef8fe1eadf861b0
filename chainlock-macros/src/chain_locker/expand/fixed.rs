//! Fixed chains: the straight-line hand-over-hand descent through each level in turn
//! (`descend*`, `run*`), and the stages that find each next lock (closures or keys).

use super::super::validate::Mode;
use super::flavor::{Flavor, recording_branches, runtime_note};
use super::keys::link;
use super::optimistic::{End, optimistic_levels, passes};
use super::{Docs, LevelCode, Signature, literal, method_ident, signature};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// How a stage finds the next lock: the user's closure, or a key lookup through `Children`.
#[derive(Clone, Copy)]
pub(super) enum Stages<'a> {
    Closures,
    /// Through [`link`], named by the root's lock type.
    Keys {
        root_lock: &'a TokenStream,
    },
}

impl Stages<'_> {
    /// The expression that runs the stage on `parent`, giving `Option<Arc<next lock>>`.
    pub(super) fn call(self, parent: &LevelCode<'_>, child: &LevelCode<'_>) -> TokenStream {
        let index = parent.index;
        match self {
            Stages::Closures => {
                let stage = format_ident!("stage{}", index);
                let borrow = parent.borrow_guard();
                quote!(#stage(#borrow))
            }
            Stages::Keys { root_lock } => {
                let (guard, key, link) = (
                    &parent.guard,
                    format_ident!("key{}", index),
                    link(root_lock, parent, child),
                );
                quote!(#link::child(&*#guard, #key))
            }
        }
    }

    /// Whether a stage borrows its level mutably (so the guard binding needs `mut`).
    pub(super) fn borrows_mutably(self, level: &LevelCode<'_>) -> bool {
        matches!(self, Stages::Closures) && level.mode != Mode::Shared
    }
}

/// The straight-line hand-over-hand statements that lock `levels` from the root down and
/// leave the last level's guard bound to its `guard` local.
/// `unheld_leaf`: the last level's guard is handed out (`descend*`), its hold not followed.
pub(super) fn hand_over_hand(
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    stages: Stages,
    unheld_leaf: bool,
) -> Vec<TokenStream> {
    let last = levels.len() - 1;
    let mutability = |level: &LevelCode<'_>| {
        (level.index < last && stages.borrows_mutably(level)).then(|| quote!(mut))
    };
    let root = &levels[0];
    let root_handle = if flavor.is_async() {
        quote!(<__cl::Arc<_> as __cl::Clone>::clone(root))
    } else {
        quote!(root)
    };
    let (root_guard, root_held, acquire_root, root_mut) = (
        &root.guard,
        &root.held,
        flavor.acquire(root, &root_handle, unheld_leaf && last == 0),
        mutability(root),
    );
    // A closed root behaves as absent, like any closed level.
    let open = |level: &LevelCode<'_>| {
        let (guard, index) = (&level.guard, level.index);
        quote!((&__cl::ClosedProbe(&*#guard, #index)).open()?;)
    };
    let root_open = open(root);
    let mut body = vec![quote! {
        let (#root_mut #root_guard, #root_held) = #acquire_root;
        #root_open
    }];
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let find_next = stages.call(parent, child);
        let handle = if flavor.is_async() {
            quote!(__next)
        } else {
            quote!(&__next)
        };
        let acquire = flavor.acquire(child, &handle, unheld_leaf && child.index == last);
        let (parent_guard, parent_held, child_guard, child_held, child_index, child_mut) = (
            &parent.guard,
            &parent.held,
            &child.guard,
            &child.held,
            child.index,
            mutability(child),
        );
        let child_open = open(child);
        body.push(quote! {
            let __next = __cl::found(#find_next, #child_index)?;
            let (#child_mut #child_guard, #child_held) = #acquire;
            __cl::release_as(__rec, #parent_guard, #parent_held);
            #child_open
        });
    }
    body
}

/// The statements that take `level` (found in `__next`, or the root) with the steps `__s`,
/// its hold as `taken_as` says (its parent's stage run first), release its parent and check
/// it is open. `is_async`: the async body's steps (an owned handle, awaited).
fn take_level(
    levels: &[LevelCode<'_>],
    level: &LevelCode<'_>,
    taken_as: &TokenStream,
    is_async: bool,
) -> TokenStream {
    let (guard, held, index) = (&level.guard, &level.held, literal(level.index));
    let borrowed = level.index + 1 < levels.len() && level.mode != Mode::Shared;
    let guard_mut = borrowed.then(|| quote!(mut));
    let step = level.step();
    let take = match (is_async, level.index) {
        (true, 0) => {
            quote!(__s.#step(#taken_as, <__cl::Arc<_> as __cl::Clone>::clone(root), #index).await?)
        }
        (true, _) => quote!(__s.#step(#taken_as, __next, #index).await?),
        (false, 0) => quote!(__s.#step(#taken_as, root, #index)?),
        (false, _) => quote!(__s.#step(#taken_as, __next, #index)?),
    };
    let parent = level.index.checked_sub(1).map(|parent| &levels[parent]);
    let find = parent.map(|parent| find_next(parent, level));
    let release = parent.map(|parent| {
        let (guard, held) = (&parent.guard, &parent.held);
        quote!(__s.release(#guard, #held);)
    });
    quote! {
        #find
        let (#guard_mut #guard, #held) = #take;
        #release
        (&__cl::ClosedProbe(&*#guard, #index)).open()?;
    }
}

/// `let __next = ...`: the parent's stage, its answer checked.
fn find_next(parent: &LevelCode<'_>, child: &LevelCode<'_>) -> TokenStream {
    let (stage, borrow) = (
        format_ident!("stage{}", parent.index),
        parent.borrow_guard(),
    );
    let index = literal(child.index);
    quote!(let __next = __cl::found(#stage(#borrow), #index)?;)
}

/// The parameters and bounds of a body over `levels`: `root`, a stage per level but the
/// last (its child's lock a generic parameter), each level's bound (the blocking body's on
/// its strategy `__W`, whose guard types it uses; the async body's on the lock).
fn body_signature(
    levels: &[LevelCode<'_>],
    stages_of: &[LevelCode<'_>],
    is_async: bool,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let root_lock = &levels[0].lock;
    let mut params = vec![quote!(root: &__cl::Arc<#root_lock>)];
    for pair in stages_of.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let stage = format_ident!("stage{}", parent.index);
        let stage_type = parent.stage_type(child, !is_async);
        params.push(quote!(#stage: #stage_type));
    }
    let bounds = levels
        .iter()
        .map(|level| {
            let (lock, ty) = (&level.lock, level.ty);
            if is_async {
                let lock_trait = Flavor::Async.lock_trait(level.mode);
                quote!(#lock: #lock_trait<Target = #ty>)
            } else {
                level.body_bound()
            }
        })
        .collect();
    (params, bounds)
}

/// The one body of a chain's blocking flavors (`__descend`, given the `Blocking` or
/// `Deadline` strategy `__w`) or of its async ones (`__descend_async`, given an optional
/// `deadline`): hand over hand to the leaf. Whether the call records is asked once: the
/// blocking body is given it (`__rec`) by its wrapper, whose whole body runs in
/// `recording_branches!` ([`wrapper_body`]); the async body asks itself. The leaf is taken
/// as `__hold` says: `Unheld` for a `descend*`, which hands the guard out (the body returns
/// it alone), `Kept` for a `run*`, which releases it where the telemetry sees it (the guard
/// and its record), and, blocking only, `Found` for `lock_leaves`, which only finds each
/// leaf's lock (its parent released) and locks the leaves together (`__private::End`).
/// Hidden: the public methods are thin wrappers around it.
pub(super) fn body_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    is_async: bool,
) -> TokenStream {
    let leaf = levels.last().expect("validated: at least one level");
    let generics = levels.iter().map(|level| &level.lock);
    let (params, bounds) = body_signature(levels, levels, is_async);
    if is_async {
        let steps = levels.iter().map(|level| {
            let hold = if level.index == leaf.index {
                quote!(__hold)
            } else {
                quote!(__cl::Kept)
            };
            take_level(levels, level, &hold, true)
        });
        let (leaf_guard, leaf_held) = (&leaf.guard, &leaf.held);
        let body = recording_branches(
            Flavor::Async,
            Some(levels.len()),
            &quote! {
                let __s = __cl::AsyncSteps(__rec, deadline, &__CL_LEVELS);
                #(#steps)*
                __cl::Ok(__hold.out(#leaf_guard, #leaf_held))
            },
        );
        let leaf_type = leaf.guard_type(Flavor::Async);
        return quote! {
            #[doc(hidden)]
            #vis async fn __descend_async<__H: __cl::Hold, #(#generics: ?__cl::Sized),*>(
                &self, __hold: __H, deadline: __cl::Option<__cl::Instant>, #(#params),*
            ) -> __cl::Res<__H::Out<#leaf_type>>
            where
                #(#bounds,)*
            {
                #body
            }
        };
    }
    let optimistic = optimistic_levels(levels);
    let stop = (optimistic > 0).then(|| quote!(__cl::Stop: __cl::From<__W::Error>,));
    let steps = if optimistic > 0 && optimistic == levels.len() - 1 {
        // All but the leaf optimistic: the passes end with the leaf's step. Their answer
        // through `?` (not returned as it is): a block layout with one jump less on the fast
        // path (callgrind, `docs/benchmarks.md`).
        let passes = passes(levels, optimistic, None, &End::Leaf);
        quote!(__cl::Ok(#passes?))
    } else {
        // The optimistic levels end holding the first locked one.
        let start = (optimistic > 0).then(|| {
            let first = &levels[optimistic];
            let (guard, held) = (&first.guard, &first.held);
            let guard_mut = (first.mode != Mode::Shared).then(|| quote!(mut));
            let passes = passes(levels, optimistic, None, &End::Take(quote!(__cl::Kept)));
            quote!(let (#guard_mut #guard, #held) = #passes?;)
        });
        let parents = &levels[..levels.len() - 1];
        let locked = parents[optimistic..].iter().enumerate().map(|(at, level)| {
            // The first locked level after optimistic ones is taken by the passes.
            (optimistic == 0 || at > 0)
                .then(|| take_level(levels, level, &quote!(__cl::Kept), false))
        });
        let (find, handle, parent) = match parents.last() {
            Some(parent) => {
                let (guard, held) = (&parent.guard, &parent.held);
                (
                    Some(find_next(parent, leaf)),
                    quote!(__next),
                    quote!((#guard, #held)),
                )
            }
            None => (None, quote!(root), quote!(())),
        };
        let (leaf_step, index) = (format_ident!("{}_end", leaf.step()), literal(leaf.index));
        quote! {
            let __s = __cl::Steps(__w, __rec, &__CL_LEVELS);
            #start
            #(#locked)*
            #find
            __s.#leaf_step(__hold, #handle, #index, #parent, |__g| (&__cl::ClosedProbe(&**__g, #index)).open())
        }
    };
    let (wait, lock) = (leaf.wait_trait(), &leaf.lock);
    quote! {
        __cl::tracked! {
            #[doc(hidden)]
            #[inline]
            #vis fn __descend<__Rc: __cl::Rec, __W: __cl::Wait, __H: __cl::End, #(#generics: ?__cl::Sized),*>(
                &self, __rec: __Rc, __w: __W, __hold: __H, #(#params),*
            ) -> __cl::Res<__H::Out<<__W as #wait<#lock>>::Guard, #lock>>
            where
                __cl::Exit: __cl::From<__W::Error>,
                #stop
                #(#bounds,)*
            {
                #steps
            }
        }
    }
}

/// The call of the body from a wrapper of `flavor`, the leaf taken as `hold`.
fn call_body(levels: &[LevelCode<'_>], flavor: Flavor, hold: &TokenStream) -> TokenStream {
    let stages = levels
        .windows(2)
        .map(|pair| format_ident!("stage{}", pair[0].index));
    match flavor {
        Flavor::Blocking => {
            quote!(self.__descend(__rec, __cl::Blocking, #hold, root, #(#stages),*))
        }
        Flavor::Deadline => {
            quote!(self.__descend(__rec, __cl::Deadline(deadline), #hold, root, #(#stages),*))
        }
        Flavor::Async => quote!(self.__descend_async(#hold, __cl::None, root, #(#stages),*).await),
        Flavor::AsyncDeadline => {
            quote!(self.__descend_async(#hold, __cl::Some(deadline), root, #(#stages),*).await)
        }
    }
}

/// A wrapper's body, which asks the telemetry once whether the call records: a blocking
/// one around the whole wrapper (its result is the caller's, so that the copy that does not
/// record merges with the recording one at the end, not at the leaf's guard and record), an
/// async one inside `__descend_async`.
fn wrapper_body(levels: &[LevelCode<'_>], flavor: Flavor, body: &TokenStream) -> TokenStream {
    if flavor.is_async() {
        body.clone()
    } else {
        recording_branches(flavor, Some(locked_levels(levels)), body)
    }
}

/// How many levels a pass takes (its sampling chances): an optimistic level is read, not
/// taken, and has none (counting it would spend chances no acquisition uses, and the locked
/// levels' estimates would grow by the optimistic levels' share).
pub(super) fn locked_levels(levels: &[LevelCode<'_>]) -> usize {
    // Optimistic levels are a prefix (the parser refuses any other place).
    levels.len() - optimistic_levels(levels)
}

/// `descend*`: hand over hand to the leaf, returning its owned guard (a wrapper of the body).
pub(super) fn descend_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { summary, krate } = docs;
    let name = method_ident("descend", flavor);
    let Signature {
        generics,
        params,
        bounds,
        ..
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let leaf_guard_type = leaf.guard_type(flavor);
    let asyncness = flavor.is_async().then(|| quote!(async));
    let body = wrapper_body(
        levels,
        flavor,
        &call_body(levels, flavor, &quote!(__cl::Unheld)),
    );
    let doc = format!(
        "Locks {summary} hand over hand and returns the leaf's owned guard: stage `i` returns the \
         lock of level `i + 1`, taken before level `i` is released; `None` or a closed level ends \
         the descent with [`Exit::Absent`]({krate}::Exit::Absent){}, every lock taken released.{runtime}",
        if flavor.has_deadline() {
            ", a lock not taken by `deadline` with `Exit::TimedOut`"
        } else {
            ""
        },
        runtime = runtime_note(flavor),
    );
    let doc = if optimistic_levels(levels) > 0 {
        format!(
            "{doc} The optimistic levels are read, not locked: their stages may run once per \
             pass, their answers used once the level validates (the guide's \
             [Optimistic levels](macro@{krate}::chain_locker#optimistic-levels))."
        )
    } else {
        doc
    };
    flavor.tracked(quote! {
        #[doc = #doc]
        #[inline]
        #vis #asyncness fn #name<#(#generics),*>(&self, #(#params),*)
            -> __cl::Res<#leaf_guard_type>
        where
            #(#bounds,)*
        {
            #body
        }
    })
}

/// `run*`: descend, then run a last closure on the leaf and release it (a wrapper of the
/// body, whose leaf record the telemetry follows: `Kept`).
pub(super) fn run_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
) -> TokenStream {
    let name = method_ident("run", flavor);
    let descend = method_ident("descend", flavor);
    let Signature {
        mut generics,
        mut params,
        bounds,
        ..
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let leaf_reference = leaf.reference();
    generics.push(quote!(__R));
    params.push(quote!(leaf: impl __cl::FnOnce(#leaf_reference) -> __R));
    let asyncness = flavor.is_async().then(|| quote!(async));
    let mutability = (leaf.mode != Mode::Shared).then(|| quote!(mut));
    let (leaf_guard, leaf_held) = (&leaf.guard, &leaf.held);
    let borrow = leaf.borrow_guard();
    let call = call_body(levels, flavor, &quote!(__cl::Kept));
    let doc = format!(
        "Like [`{descend}`](Self::{descend}), then runs `leaf` on the leaf and releases it."
    );
    // The record binds after the guard, so it drops first: the hold ends just before the
    // guard unlocks, whether `leaf` returns or panics.
    let body = quote! {
        let (#mutability #leaf_guard, #leaf_held) = #call?;
        __cl::Ok(leaf(#borrow))
    };
    let body = wrapper_body(levels, flavor, &body);
    flavor.tracked(quote! {
        #[doc = #doc]
        #[inline]
        #vis #asyncness fn #name<#(#generics),*>(&self, #(#params),*) -> __cl::Res<__R>
        where
            #(#bounds,)*
        {
            #body
        }
    })
}
