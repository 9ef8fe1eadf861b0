//! Procedural macros of [chainlock](https://docs.rs/chainlock). Depend on `chainlock` and
//! use them from there: the generated code calls `chainlock`'s runtime.
//!
//! Each entry point only hands its tokens to the module of its macro; errors become
//! compile errors here, in one place.

mod chain_locker;
mod chain_node;

use proc_macro::TokenStream;

/// Generates a typed hand-over-hand locker for a chain of levels.
///
/// The full documentation, with examples, is on the re-export `chainlock::chain_locker`.
#[proc_macro]
pub fn chain_locker(input: TokenStream) -> TokenStream {
    chain_locker::chain_locker(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `chainlock::ChainNode` and `chainlock::chain::Children` for a tree node type, so
/// that generated lockers can descend into it by key and treat it as absent once closed.
///
/// The full documentation, with examples, is on the re-export `chainlock::ChainNode`.
#[proc_macro_derive(ChainNode, attributes(chain))]
pub fn derive_chain_node(input: TokenStream) -> TokenStream {
    chain_node::derive(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
