//! What an invalid invocation expands to: its errors, plus stubs of what it would have
//! defined, so that the user sees the macro's errors and not a cascade of "cannot find
//! type" errors at every use of the locker.

use super::ast::Input;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn fallback(input: &Input, errors: &syn::Error) -> TokenStream {
    let errors = errors.to_compile_error();
    match input {
        // Several `compile_error!`s are only valid in expression position inside a block.
        Input::Anonymous(_) => quote! {{ #errors }},
        Input::Named(lockers) => {
            let stubs = lockers.iter().map(|locker| {
                let (attrs, vis, ident) = (&locker.attrs, &locker.vis, &locker.ident);
                quote!(#(#attrs)* #vis struct #ident;)
            });
            quote!(#errors #(#stubs)*)
        }
    }
}
