//! Fixed chains: the straight-line hand-over-hand descent through each level in turn
//! (`descend*`, `run*`), and the stages that find each next lock (closures or keys).

use super::super::validate::Mode;
use super::flavor::{Flavor, recording_branches, recording_steps, runtime_note};
use super::optimistic::{End, optimistic_levels, passes};
use super::{Docs, LevelCode, Signature, link, literal, method_ident, signature};
use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};

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
    let (step, dot_await) = (level.step(), is_async.then(|| quote!(.await)));
    let parent = level.index.checked_sub(1).map(|parent| &levels[parent]);
    let (find_next, take, release) = match parent {
        None => (None, quote!(__s.#step(#taken_as, root, #index)), None),
        // Below a locked parent, the hold followed: the stage's answer checked, the level
        // taken, the parent released, as a person writes it (through a step that takes the
        // stage's answer and the parent, `Steps::x_next`, LLVM left a deep chain's last lock
        // and a release out of line: callgrind, `chain_zero_cost`'s 8 levels, 245 for 213).
        Some(parent) if taken_as.to_string() == quote!(__cl::Kept).to_string() => {
            let (stage, (parent_guard, parent_held)) =
                (find(parent), (&parent.guard, &parent.held));
            (
                Some(quote!(let __next = __cl::found(#stage, #index)?;)),
                quote!(__s.#step(__cl::Kept, __next, #index)),
                Some(quote!(__s.release(#parent_guard, #parent_held);)),
            )
        }
        Some(parent) => {
            let (found, guard, held) = (find(parent), &parent.guard, &parent.held);
            (
                None,
                quote!(__s.#step(#taken_as, #found, #index)),
                Some(quote!(__s.release(#guard, #held);)),
            )
        }
    };
    quote! {
        #find_next
        let (#guard_mut #guard, #held) = #take #dot_await ?;
        #release
        (&__cl::ClosedProbe(&*#guard, #index)).open()?;
    }
}

/// The leaf's statements in the blocking body below a locked parent (or as the root): its
/// lock checked found, as every level's (not by the leaf's step, which takes a stage's answer
/// only below an optimistic parent: LLVM then inlined an 8-level chain's leaf lock and parent
/// release, callgrind 215 for 213), then its step, which ends as `__hold` says.
fn leaf_step(levels: &[LevelCode<'_>]) -> [TokenStream; 2] {
    let leaf = levels.last().expect("validated: at least one level");
    let (step, index) = (format_ident!("{}_end", leaf.step()), literal(leaf.index));
    let (found, handle, parent) = match levels.len().checked_sub(2).map(|at| &levels[at]) {
        Some(parent) => {
            let (find, guard, held) = (find(parent), &parent.guard, &parent.held);
            let found = quote!(let __next = __cl::found(#find, #index)?;);
            (found, quote!(__next), quote!((#guard, #held)))
        }
        None => (TokenStream::new(), quote!(root), quote!(())),
    };
    let open = quote!(|__g, __i| (&__cl::ClosedProbe(&**__g, __i)).open());
    [
        found,
        quote!(__s.#step(__hold, #handle, #index, #parent, #open)),
    ]
}

/// The parent's stage run on it: its answer, the next level's lock if there is one.
fn find(parent: &LevelCode<'_>) -> TokenStream {
    let (stage, borrow) = (
        format_ident!("stage{}", parent.index),
        parent.borrow_guard(),
    );
    quote!(#stage.find(#borrow))
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
        let stage_type = parent.body_stage_type(child, root_lock, is_async);
        params.push(quote!(#stage: #stage_type));
    }
    let bounds = levels
        .iter()
        .map(|level| {
            let (lock, ty) = (&level.lock, level.ty);
            if is_async {
                let lock_trait = Flavor::Async.lock_trait(level.mode);
                quote!(#lock: #lock_trait<Target = #ty> + ?__cl::Sized)
            } else {
                level.body_bound()
            }
        })
        .collect();
    (params, bounds)
}

/// The one body of a chain's blocking flavors (`__descend`, given the `Blocking` strategy
/// or the deadline, an `Instant`, as `__w`) or of its async ones (`__descend_async`, given
/// an optional `deadline`): hand over hand to the leaf, a function of the locker's block
/// beside its `impl`. Its stages are the closures of `descend*`/`run*` or the keys of the
/// key-path methods as they are (`__private::StageS`, ...). It asks the telemetry once
/// whether the call records (`recording_branches!`). The leaf ends as `__hold` says
/// (`__private::End`): `Unheld` for a `descend*`, which hands the guard out, the `run*`'s
/// last closure, run on the leaf, which is then released where the telemetry sees it, and,
/// blocking only, `Found` for `lock_leaves`, which only finds each leaf's lock (its parent
/// released) and locks the leaves together. The public methods are thin wrappers around it.
pub(super) fn body_method(levels: &[LevelCode<'_>], is_async: bool) -> TokenStream {
    let leaf = levels.last().expect("validated: at least one level");
    let generics = levels.iter().map(|level| &level.lock);
    let (params, bounds) = body_signature(levels, levels, is_async);
    let (leaf_lock, mode) = (&leaf.lock, leaf.end_mode());
    if is_async {
        let steps = levels.iter().map(|level| {
            let hold = if level.index == leaf.index {
                quote!(__hold.hold())
            } else {
                quote!(__cl::Kept)
            };
            take_level(levels, level, &hold, true)
        });
        let (leaf_guard, leaf_held) = (&leaf.guard, &leaf.held);
        let body = recording_steps(
            Flavor::Async,
            levels.len(),
            &quote!(__cl::AsyncSteps(@rec, deadline.into(), &__CL_LEVELS)),
            &quote! {
                #(#steps)*
                __hold.taken(#leaf_guard, #leaf_held)
            },
        );
        let leaf_type = leaf.guard_type(Flavor::Async);
        return quote! {
            async fn __descend_async<__H, #(#generics),*>(
                __hold: __H, deadline: impl __cl::Into<__cl::Option<__cl::Instant>>, #(#params),*
            ) -> __cl::Res<__H::Out>
            where
                __H: __cl::End<#leaf_type, #leaf_lock, #mode>,
                #(#bounds,)*
            {
                #body
            }
        };
    }
    let optimistic = optimistic_levels(levels);
    let stop = (optimistic > 0).then(|| quote!(__cl::Stop: __cl::From<__W::Error>,));
    let body = if optimistic > 0 && optimistic == levels.len() - 1 {
        // All but the leaf optimistic: the passes end with the leaf's step. Their answer
        // through `?` (not returned as it is): a block layout with one jump less on the fast
        // path (callgrind, `docs/benchmarks.md`).
        let passes = passes(levels, optimistic, None, &End::Leaf);
        recording_branches(
            Flavor::Blocking,
            Some(locked_levels(levels)),
            &quote!(__cl::Ok(#passes?)),
        )
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
        let leaf = leaf_step(levels);
        let steps = quote! {
            #start
            #(#locked)*
            #(#leaf)*
        };
        if optimistic == 0 {
            // The steps bound by the telemetry's macro (the passes would need `__rec`).
            let ctor = quote!(__cl::Steps(__w, @rec, &__CL_LEVELS));
            recording_steps(Flavor::Blocking, locked_levels(levels), &ctor, &steps)
        } else {
            let steps = quote!(let __s = __cl::Steps(__w, __rec, &__CL_LEVELS); #steps);
            recording_branches(Flavor::Blocking, Some(locked_levels(levels)), &steps)
        }
    };
    let wait = leaf.wait_trait();
    // The optimistic passes run the leaf's step in each pass: their end is copied.
    let copy = (optimistic > 0).then(|| quote!(__H: __cl::Copy,));
    // `?Sized` in the where clause, so that the generics fit a line.
    let maybe_unsized = levels.iter().map(|level| &level.lock);
    quote! {
        __cl::tracked! {
            #[inline]
            fn __descend<__W: __cl::Wait, __H, #(#generics),*>(
                __w: __W, __hold: __H, #(#params),*
            ) -> __cl::Res<__H::Out>
            where
                #(#maybe_unsized: ?__cl::Sized,)*
                __H: __cl::End<<__W as #wait<#leaf_lock>>::Guard, #leaf_lock, #mode>,
                #copy
                __cl::Exit: __cl::From<__W::Error>,
                #stop
                #(#bounds,)*
            {
                #body
            }
        }
    }
}

/// The call of the body from a wrapper of `flavor`, the leaf taken as `hold`, its stages
/// `stages` (the closures `stage{i}`, or a key path's keys).
pub(super) fn call_body(flavor: Flavor, hold: &TokenStream, stages: &[TokenStream]) -> TokenStream {
    match flavor {
        Flavor::Blocking => quote!(__descend(__cl::Blocking, #hold, root, #(#stages),*)),
        Flavor::Deadline => quote!(__descend(deadline, #hold, root, #(#stages),*)),
        Flavor::Async => quote!(__descend_async(#hold, __cl::None, root, #(#stages),*).await),
        Flavor::AsyncDeadline => {
            quote!(__descend_async(#hold, deadline, root, #(#stages),*).await)
        }
    }
}

/// The closures `stage{i}` of the closure methods, as the body takes them.
fn closure_stages(levels: &[LevelCode<'_>]) -> Vec<TokenStream> {
    levels
        .windows(2)
        .map(|pair| format_ident!("stage{}", pair[0].index).to_token_stream())
        .collect()
}

/// The body of a `run*` (closure or key path): the body's call, its end `leaf` itself, run
/// on the leaf inside; or, with optimistic levels (whose passes copy their end), the leaf
/// `Kept`, then `leaf` on it. The record binds after the guard, so it drops first: the hold
/// ends just before the guard unlocks, whether `leaf` returns or panics.
pub(super) fn run_body(
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    stages: &[TokenStream],
) -> TokenStream {
    if optimistic_levels(levels) == 0 {
        // `leaf` is the body's end (`__private::End`): it runs on the leaf, released after.
        return call_body(flavor, &quote!(leaf), stages);
    }
    let leaf = levels.last().expect("validated: at least one level");
    let mutability = (leaf.mode != Mode::Shared).then(|| quote!(mut));
    let (leaf_guard, leaf_held) = (&leaf.guard, &leaf.held);
    let borrow = leaf.borrow_guard();
    let call = call_body(flavor, &quote!(__cl::Kept), stages);
    quote! {
        let (#mutability #leaf_guard, #leaf_held) = #call?;
        __cl::Ok(leaf(#borrow))
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
    let body = call_body(flavor, &quote!(__cl::Unheld), &closure_stages(levels));
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
    // No `#[inline]`: a one-call wrapper of the body (which has it), as the key-path ones.
    flavor.tracked(quote! {
        #[doc = #doc]
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
    let doc = format!(
        "Like [`{descend}`](Self::{descend}), then runs `leaf` on the leaf and releases it."
    );
    let body = run_body(levels, flavor, &closure_stages(levels));
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
