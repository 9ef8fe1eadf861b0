//! `#[derive(ChainNode)]`: parse the struct and its `#[chain(..)]` attributes, validate
//! them, expand to `ChainNode` and `Children` impls.

mod ast;
mod expand;
mod validate;

use proc_macro2::TokenStream;

/// Parses, validates and expands one derive input.
pub(crate) fn derive(input: TokenStream) -> syn::Result<TokenStream> {
    let input: syn::DeriveInput = syn::parse2(input)?;
    let node = ast::Node::from_syn(&input)?;
    let node = validate::validate(&node)?;
    Ok(expand::expand(&node))
}
