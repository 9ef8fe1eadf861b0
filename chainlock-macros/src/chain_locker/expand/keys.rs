//! The key-path methods (`descend_keys*`, `run_keys*`): each stage a key lookup through
//! `Children`, every lock type past the root named through the root's.

use super::super::validate::Mode;
use super::fixed::{call_body, run_body};
use super::flavor::Flavor;
use super::{Docs, LevelCode, Signature, method_ident};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The levels as the key-path methods see them: the root's lock is their one generic
/// parameter, and every later level's lock the projection `LockOf<__L0, Parent, Child>`.
/// No two levels are ever matched by their tokens: `Dir`, `self::Dir` and an alias of it are
/// the same type to the compiler, which does the unifying.
pub(super) fn keyed_levels<'a>(levels: &[LevelCode<'a>]) -> Vec<LevelCode<'a>> {
    let root_lock = &levels[0].lock;
    let mut keyed = levels.to_vec();
    for (child, parent) in keyed.iter_mut().skip(1).zip(levels) {
        let (parent_ty, child_ty) = (parent.ty, child.ty);
        child.lock = quote!(__cl::LockOf<#root_lock, #parent_ty, #child_ty>);
    }
    keyed
}

/// Generics, parameters and bounds of the key-path methods: a key per stage instead of a
/// closure. The one generic parameter is the root's lock; each step is bounded by
/// `__L0: Link<Parent, Child, Lock: ...>`, which names that parameter, so a chain whose types
/// do not implement `Children` still compiles; only calling these methods needs them.
pub(super) fn keys_signature(levels: &[LevelCode<'_>], flavor: Flavor) -> Signature {
    let root = &levels[0];
    let (root_lock, root_ty, root_trait) = (&root.lock, root.ty, flavor.lock_trait(root.mode));
    let mut params = vec![quote!(root: &__cl::Arc<#root_lock>)];
    if flavor.has_deadline() {
        params.push(quote!(deadline: __cl::Instant));
    }
    let mut bounds = vec![quote!(#root_lock: #root_trait<Target = #root_ty> + ?__cl::Sized)];
    let mut stage_args = Vec::new();
    for pair in levels.windows(2) {
        let (parent, child) = (&pair[0], &pair[1]);
        let key = format_ident!("key{}", parent.index);
        let (parent_ty, child_ty) = (parent.ty, child.ty);
        params.push(quote!(#key: &__cl::KeyOf<#root_lock, #parent_ty, #child_ty>));
        let link = flavor.link_trait(child.mode);
        bounds.push(quote!(#root_lock: #link<#parent_ty, #child_ty>));
        if parent.mode == Mode::Optimistic {
            bounds.push(quote!(#root_lock: __cl::LinkRef<#parent_ty, #child_ty>));
        }
        stage_args.push(key);
    }
    Signature {
        generics: vec![root_lock.clone()],
        params,
        bounds,
        stage_args,
    }
}

/// The stages of a key path: each a key lookup (`__private::key_mut`, ...) on its level.
pub(super) fn key_stages(levels: &[LevelCode<'_>]) -> Vec<TokenStream> {
    let root_lock = &levels[0].lock;
    let keyed = keyed_levels(levels);
    keyed
        .windows(2)
        .map(|pair| {
            let (parent, child) = (&pair[0], &pair[1]);
            let (parent_ty, child_ty, key) =
                (parent.ty, child.ty, format_ident!("key{}", parent.index));
            match parent.mode {
                Mode::Shared => quote!(__cl::key_ref::<#root_lock, #parent_ty, #child_ty>(#key)),
                Mode::Exclusive => {
                    quote!(__cl::key_mut::<#root_lock, #parent_ty, #child_ty>(#key))
                }
                Mode::Upgradable => {
                    let lock = &parent.lock;
                    quote!(__cl::key_up::<#root_lock, #parent_ty, #child_ty, #lock>(#key))
                }
                Mode::Optimistic => {
                    quote!(__cl::key_opt::<#root_lock, #parent_ty, #child_ty>(#key))
                }
            }
        })
        .collect()
}

/// The stages of a key path as the one body of a fixed chain takes them: each key as it is,
/// `(key,)` (a `__private::StageS`, ...: the body looks it up through `Children`), and an
/// optimistic level's lookup by reference (`__private::key_opt`). `key`: the name of level
/// `i`'s key.
pub(super) fn body_key_stages(
    levels: &[LevelCode<'_>],
    key: impl Fn(usize) -> proc_macro2::Ident,
) -> Vec<TokenStream> {
    let root_lock = &levels[0].lock;
    levels
        .windows(2)
        .map(|pair| {
            let (parent, child) = (&pair[0], &pair[1]);
            let key = key(parent.index);
            if parent.mode == Mode::Optimistic {
                let (parent_ty, child_ty) = (parent.ty, child.ty);
                quote!(__cl::key_opt::<#root_lock, #parent_ty, #child_ty>(#key))
            } else {
                quote!((#key,))
            }
        })
        .collect()
}

/// `descend_keys*` and `run_keys*`: the same descents, each stage a key lookup.
pub(super) fn keys_methods(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { krate, .. } = docs;
    let Signature {
        generics,
        params,
        bounds,
        ..
    } = keys_signature(levels, flavor);
    let keyed = keyed_levels(levels);
    let leaf = keyed.last().expect("validated: at least one level");
    let (leaf_guard_type, leaf_reference) = (leaf.guard_type(flavor), leaf.reference());
    let (descend, run) = (method_ident("descend", flavor), method_ident("run", flavor));
    let (descend_keys, run_keys) = (
        method_ident("descend_keys", flavor),
        method_ident("run_keys", flavor),
    );
    let asyncness = flavor.is_async().then(|| quote!(async));
    let stages = body_key_stages(levels, |index| format_ident!("key{}", index));
    let descend_body = call_body(flavor, &quote!(__cl::Unheld), &stages);
    let run_body = run_body(&keyed, flavor, &stages);
    let descend_doc = format!(
        "Like [`{descend}`](Self::{descend}), each stage a key lookup through \
         [`Children`]({krate}::chain::Children) (`key{{i}}` on level `i`)."
    );
    let run_doc =
        format!("Like [`{run}`](Self::{run}), each stage a key lookup (`key{{i}}` on level `i`).");
    let descend_keys = flavor.tracked(quote! {
        #[doc = #descend_doc]
        #vis #asyncness fn #descend_keys<#(#generics),*>(&self, #(#params),*)
            -> __cl::Res<#leaf_guard_type>
        where
            #(#bounds,)*
        {
            #descend_body
        }
    });
    let run_keys = flavor.tracked(quote! {
        #[doc = #run_doc]
        #vis #asyncness fn #run_keys<#(#generics,)* __R>(&self, #(#params,)* leaf: impl __cl::FnOnce(#leaf_reference) -> __R)
            -> __cl::Res<__R>
        where
            #(#bounds,)*
        {
            #run_body
        }
    });
    quote!(#descend_keys #run_keys)
}
