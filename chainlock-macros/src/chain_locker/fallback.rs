//! What an invalid invocation expands to: its errors, plus stubs of what it would have
//! defined, so that the user sees the macro's errors and not a cascade of "cannot find
//! type" errors at every use of the locker.

use super::ast::{Input, Kind};
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn fallback(input: &Input, errors: &syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    match &input.kind {
        // Several `compile_error!`s are only valid in expression position inside a block.
        Kind::Anonymous(_) => quote! {{ #errors }},
        Kind::Named(lockers) => {
            // One stub per name: a name defined twice is itself one of the errors.
            let mut seen = Vec::new();
            let stubs = lockers.iter().filter(|locker| {
                let first = !seen.contains(&&locker.ident);
                seen.push(&locker.ident);
                first
            });
            let stubs = stubs.map(|locker| {
                let (attrs, vis, ident) = (&locker.attrs, &locker.vis, &locker.ident);
                quote!(#(#attrs)* #vis struct #ident;)
            });
            quote!(#errors #(#stubs)*)
        }
    }
}
