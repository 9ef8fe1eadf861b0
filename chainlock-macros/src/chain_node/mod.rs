//! `#[derive(ChainNode)]`: parse the struct and its `#[chain(..)]` attributes, validate
//! them, expand to `ChainNode` and `Children` impls.

mod ast;
mod expand;
mod validate;

use crate::krate::{Caller, crate_path};
use proc_macro2::TokenStream;

/// Parses, validates and expands one derive input.
/// A failed derive still implements `ChainNode` (see [`expand::fallback`]).
pub(crate) fn derive(input: TokenStream) -> syn::Result<TokenStream> {
    let input: syn::DeriveInput = syn::parse2(input)?;
    match try_expand(&input) {
        Ok(tokens) => Ok(tokens),
        Err(errors) => {
            let mut tokens = errors.into_compile_error();
            // Without the runtime crate (itself one of the errors) there is nothing to
            // implement.
            let krate = crate_path(ast::crate_attr(&input).as_ref(), Caller::ChainNode);
            if let Ok(krate) = krate {
                tokens.extend(expand::fallback(&input, &krate));
            }
            Ok(tokens)
        }
    }
}

fn try_expand(input: &syn::DeriveInput) -> syn::Result<TokenStream> {
    let node = ast::Node::from_syn(input)?;
    let node = validate::validate(&node)?;
    Ok(expand::expand(&node))
}
