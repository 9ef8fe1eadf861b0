//! Procedural macros of [chainlock](https://docs.rs/chainlock). Depend on `chainlock` and
//! use them from there: the generated code calls `chainlock`'s runtime.
//!
//! Each entry point only hands its tokens to the module of its macro; errors become
//! compile errors here, in one place.

#![forbid(unsafe_code)]

mod chain_locker;
mod chain_node;
mod errors;
mod krate;
mod text;

use proc_macro::TokenStream;

/// *Expanded by the `chainlock-macros` crate; the generated code calls chainlock's
/// `__private` module, which is not public API.*
#[proc_macro]
pub fn chain_locker(input: TokenStream) -> TokenStream {
    chain_locker::chain_locker(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// *Expanded by the `chainlock-macros` crate into `ChainNode` and `Children` impls.*
#[proc_macro_derive(ChainNode, attributes(chain))]
pub fn derive_chain_node(input: TokenStream) -> TokenStream {
    chain_node::derive(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// *Not public API* (`chainlock::__private::chain_locker_items`): a named locker's items,
/// carried by a struct of its name, `#[chain_locker_items(items)] struct Name;`, expand to
/// `items` as `chain_locker!` wrote them. Where a struct cannot be (a named locker written
/// inside an `impl` or a trait), the carrier is rejected with one error at the locker's
/// name, and nothing it carries is seen: no cascade of errors in the generated items.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn chain_locker_items(items: TokenStream, _carrier: TokenStream) -> TokenStream {
    items
}
