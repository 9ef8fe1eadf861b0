//! `#[derive(ChainNode)]`: parse the struct and its `#[chain(..)]` attributes, validate
//! them, expand to `ChainNode` and `Children` impls.

mod ast;
mod expand;
mod validate;

use crate::krate::{Caller, crate_path};
use proc_macro2::TokenStream;

/// Parses, validates and expands one derive input.
/// A failed derive still implements `ChainNode`, and `Children` for the fields whose
/// attributes were understood and that validated (see [`ast::Node::from_syn`],
/// [`validate::validate`], [`expand::fallback`]).
pub(crate) fn derive(input: TokenStream) -> syn::Result<TokenStream> {
    let input: syn::DeriveInput = syn::parse2(input)?;
    let (errors, understood) = match ast::Node::from_syn(&input) {
        Ok((node, mut errors)) => {
            // The attributes' errors (the fields they are on read as they most likely
            // meant, or left out), then the rules' errors.
            let understood = match validate::validate(&node) {
                Ok(node) => Some(node),
                Err((more, understood)) => {
                    errors.push(more);
                    understood.map(|node| *node)
                }
            };
            match errors.finish() {
                Ok(()) => {
                    let node = understood.expect("no error, so the crate was found");
                    return Ok(expand::expand(&node));
                }
                Err(errors) => (errors, understood.map(|node| expand::expand(&node))),
            }
        }
        Err(errors) => (errors, None),
    };
    let mut tokens = errors.into_compile_error();
    // What was understood (the fields that validated), else `ChainNode` alone; without the
    // runtime crate (itself one of the errors) there is nothing to implement.
    if let Some(understood) = understood {
        tokens.extend(understood);
    } else if let Ok(krate) = crate_path(ast::crate_attr(&input).as_ref(), Caller::ChainNode) {
        tokens.extend(expand::fallback(&input, &krate));
    }
    Ok(tokens)
}
