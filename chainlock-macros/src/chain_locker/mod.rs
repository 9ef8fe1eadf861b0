//! `chain_locker!`: parse the level list, validate it, expand to a locker type.

mod ast;
mod expand;
mod fallback;
mod validate;

use proc_macro2::TokenStream;

/// Parses, validates and expands one `chain_locker!` invocation.
pub(crate) fn chain_locker(input: TokenStream) -> syn::Result<TokenStream> {
    let input: ast::Input = syn::parse2(input)?;
    Ok(match validate::validate(&input) {
        Ok(valid) => expand::expand(&valid),
        Err((errors, best)) => fallback::fallback(&input, &errors, &best),
    })
}
