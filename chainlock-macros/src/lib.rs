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
