//! `lock_leaves*`: several leaves of a chain by key path, all or nothing, in one global order.

use super::super::validate::Mode;
use super::flavor::Flavor;
use super::keys::{body_key_stages, keyed_levels, keys_signature};
use super::{Docs, LevelCode, Signature, method_ident};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

/// `lock_leaves` and `lock_leaves_until`: several leaves by key path, all or nothing.
/// Generated for chains of two or more levels whose leaf is exclusive.
pub(super) fn lock_leaves_methods(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    docs: &Docs,
) -> TokenStream {
    let leaf = levels.last().expect("validated: at least one level");
    if levels.len() < 2 {
        return TokenStream::new();
    }
    if leaf.mode != Mode::Exclusive {
        // Stand-ins whose one bound fails at the call with a plain-words message, instead of
        // "no method named `lock_leaves`".
        let leaf_ty = leaf.ty;
        return ["lock_leaves", "lock_leaves_until"]
            .into_iter()
            .map(|name| {
                let name = Ident::new(name, Span::call_site());
                quote! {
                    #[doc(hidden)]
                    #vis fn #name<__L, __P>(&self, root: &__cl::Arc<__L>, paths: __P) -> !
                    where
                        __L: ?__cl::Sized,
                        __P: __cl::ExclusiveLeaf<#leaf_ty>,
                    {
                        __cl::no_exclusive_leaf(root, paths)
                    }
                }
            })
            .collect();
    }
    [Flavor::Blocking, Flavor::Deadline]
        .into_iter()
        .map(|flavor| lock_leaves_method(vis, levels, flavor, docs))
        .collect()
}

fn lock_leaves_method(
    vis: &TokenStream,
    levels: &[LevelCode<'_>],
    flavor: Flavor,
    docs: &Docs,
) -> TokenStream {
    let Docs { summary, krate } = docs;
    let Signature {
        generics,
        params,
        bounds,
        stage_args: keys,
    } = keys_signature(levels, flavor);
    let keyed = keyed_levels(levels);
    let leaf = keyed.last().expect("two or more levels");
    let leaf_lock = &leaf.lock;
    let name = method_ident("lock_leaves", flavor);
    let wait = if flavor.has_deadline() {
        quote!(deadline)
    } else {
        quote!(__cl::Blocking)
    };
    let root_lock = &levels[0].lock;
    // The closure's keys, named short so that its call fits a line.
    let short = |index: usize| format_ident!("k{}", index);
    let stages = body_key_stages(levels, short);
    let key_types: Vec<TokenStream> = levels
        .windows(2)
        .map(|pair| {
            let (parent_ty, child_ty) = (pair[0].ty, pair[1].ty);
            quote!(__cl::KeyOf<#root_lock, #parent_ty, #child_ty>)
        })
        .collect();
    let lifetime_bounds: Vec<TokenStream> = key_types
        .iter()
        .map(|key_type| quote!(#key_type: '__path))
        .collect();
    let short_keys: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(index, _)| short(index))
        .collect();
    let (path_item, path_pattern) = if keys.len() == 1 {
        let (key_type, key) = (&key_types[0], &short_keys[0]);
        (quote!(&'__path #key_type), quote!(#key))
    } else {
        (
            quote!((#(&'__path #key_types),*)),
            quote!((#(#short_keys),*)),
        )
    };
    let mut params = params;
    params.truncate(params.len() - keys.len());
    let doc = format!(
        "Locks the leaves at the end of several key paths of {summary}, all or nothing, in one \
         global order (so overlapping sets never deadlock), and returns their guards in the order \
         of `paths`; a path absent or closed{} is named by the [`LeavesExit`]({krate}::chain::LeavesExit).",
        if flavor.has_deadline() {
            ", or the deadline passing,"
        } else {
            ""
        },
    );
    // Tracked: the leaves, taken together at the end, are recorded at the caller's line
    // (the paths' levels at the closure's, the `chain_locker!` invocation).
    flavor.tracked(quote! {
        #[doc = #doc]
        #vis fn #name<'__path, #(#generics,)* __P>(&self, #(#params,)* paths: __P)
            -> __cl::Leaves<__cl::XGuard<#leaf_lock>>
        where
            #(#bounds,)*
            __P: __cl::IntoIterator<Item = #path_item>,
            #(#lifetime_bounds,)*
        {
            // Each leaf's lock found by the body (its parent released; with its level and
            // closed check), then the leaves locked together, recorded at their level.
            __cl::leaves(#wait, paths, |__w, #path_pattern| __descend(__w, __cl::Found, root, #(#stages),*))
        }
    })
}
