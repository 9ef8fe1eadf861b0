//! Fixed chains: the straight-line hand-over-hand descent through each level in turn
//! (`descend*`, `run*`), and the stages that find each next lock (closures or keys).

use super::super::validate::Mode;
use super::flavor::{Flavor, recording_branches, runtime_note};
use super::keys::link;
use super::{Docs, LevelCode, Signature, method_ident, signature};
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
            __cl::release(#parent_guard, #parent_held);
            #child_open
        });
    }
    body
}

/// `descend*`: hand over hand to the leaf, returning its owned guard.
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
    let (leaf_guard_type, leaf_guard, leaf_held) =
        (leaf.guard_type(flavor), &leaf.guard, &leaf.held);
    let asyncness = flavor.is_async().then(|| quote!(async));
    let body = hand_over_hand(levels, flavor, Stages::Closures, true);
    let body = recording_branches(
        flavor,
        Some(levels.len()),
        &quote! {
            #(#body)*
            __cl::Ok(__cl::leaf(#leaf_guard, #leaf_held))
        },
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

/// `__descend*_held`: [`descend_method`]'s body, returning the leaf's guard with its
/// telemetry record, for `run*` (which releases the leaf where the telemetry sees it, and
/// has asked the telemetry once whether this call records: `__rec`). Hidden:
/// a guard without its record is what users get, from `descend*`. `run*` calls it as it used
/// to call `descend*`, so that without the telemetry it compiles to the same instructions.
pub(super) fn held_descend_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
) -> TokenStream {
    let name = held_descend_ident(flavor);
    let Signature {
        generics,
        params,
        bounds,
        ..
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let (leaf_guard_type, leaf_guard, leaf_held) =
        (leaf.guard_type(flavor), &leaf.guard, &leaf.held);
    let asyncness = flavor.is_async().then(|| quote!(async));
    let body = hand_over_hand(levels, flavor, Stages::Closures, false);
    // The record comes out through `__held` (zero-sized without the telemetry): the result
    // is `descend*`'s, and so is the code a `run*` compiles to.
    flavor.tracked(quote! {
        #[doc(hidden)]
        #[inline]
        #vis #asyncness fn #name<__Rec: __cl::Rec, #(#generics),*>(
            &self,
            __rec: __Rec,
            __held: &mut __cl::Held,
            #(#params),*
        ) -> __cl::Res<#leaf_guard_type>
        where
            #(#bounds,)*
        {
            #(#body)*
            *__held = #leaf_held;
            __cl::Ok(#leaf_guard)
        }
    })
}

fn held_descend_ident(flavor: Flavor) -> proc_macro2::Ident {
    proc_macro2::Ident::new(
        &format!("__descend{}_held", flavor.suffix()),
        proc_macro2::Span::call_site(),
    )
}

/// `run*`: descend, then run a last closure on the leaf and release it.
pub(super) fn run_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
) -> TokenStream {
    let name = method_ident("run", flavor);
    let descend = method_ident("descend", flavor);
    let held_descend = held_descend_ident(flavor);
    let Signature {
        mut generics,
        mut params,
        bounds,
        stage_args,
    } = signature(levels, flavor);
    let leaf = levels.last().expect("validated: at least one level");
    let leaf_reference = leaf.reference();
    generics.push(quote!(__R));
    params.push(quote!(leaf: impl __cl::FnOnce(#leaf_reference) -> __R));
    let asyncness = flavor.is_async().then(|| quote!(async));
    let dot_await = flavor.is_async().then(|| quote!(.await));
    let deadline_arg = flavor.has_deadline().then(|| quote!(deadline,));
    let mutability = (leaf.mode != Mode::Shared).then(|| quote!(mut));
    let (leaf_guard, leaf_held) = (&leaf.guard, &leaf.held);
    let borrow = leaf.borrow_guard();
    let doc = format!(
        "Like [`{descend}`](Self::{descend}), then runs `leaf` on the leaf and releases it."
    );
    // Declared after the guard, the record drops first: the hold ends (`Held` ends it when
    // dropped) just before the guard unlocks, whether `leaf` returns or panics. The telemetry
    // is asked here, once, for the descent and the leaf (`__descend*_held` takes `__rec`).
    let body = recording_branches(
        flavor,
        Some(levels.len()),
        &quote! {
            let #mutability #leaf_guard;
            let mut #leaf_held = __cl::no_hold();
            #leaf_guard = self.#held_descend(__rec, &mut #leaf_held, root, #deadline_arg #(#stage_args),*) #dot_await ?;
            __cl::Ok(leaf(#borrow))
        },
    );
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
