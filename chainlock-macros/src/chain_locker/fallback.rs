//! What an invalid invocation expands to: its errors, plus what it would have defined, as
//! far as the errors allow, so that the user sees the macro's errors and not a cascade at
//! every use of the locker ("cannot find type", "no method named `run`"). A locker whose
//! levels can be read despite the errors (a mistyped modifier, `&T` or `Arc<Mutex<T>>` for
//! `T`) gets its full expansion; one whose levels cannot (`_`, `impl Trait`, `Self`, no
//! level at all) gets a bare unit struct. Each level keeps the mode it was written with; a
//! misspelled modifier is read as the one it is a near miss of (`shraed`: `shared`), and one
//! like no modifier as `optimistic` above an `optimistic` level, exclusive otherwise; two
//! levels run together by a missing `,` (`Registry Lecture`) are two (`validate.rs`), so
//! that the uses' stages fit.

use super::ast::{Input, Kind};
use super::expand;
use super::validate::Valid;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn fallback(input: &Input, errors: &syn::Error, best: &Valid<'_>) -> TokenStream {
    let errors = errors.to_compile_error();
    match &input.kind {
        // Several `compile_error!`s are only valid in expression position inside a block.
        Kind::Anonymous(_) => {
            let locker = &best.lockers[0];
            if locker.usable {
                let value = expand::expand(best);
                quote! {{ #errors #value }}
            } else {
                quote! {{ #errors }}
            }
        }
        Kind::Named(lockers) => {
            let defined = best.lockers.iter().zip(lockers).map(|(valid, locker)| {
                if valid.usable {
                    let items = expand::locker(&best.krate, valid);
                    expand::carried(&best.krate, &locker.attrs, &locker.ident, &items)
                } else {
                    // Bare, without the carrier: its path may be what failed (no chainlock
                    // crate found), and a bare struct has nothing to cascade.
                    let (attrs, vis, ident) = (&locker.attrs, &locker.vis, &locker.ident);
                    quote!(#(#attrs)* #vis struct #ident;)
                }
            });
            // One definition per name and `cfg` (the first): a name defined twice is itself
            // one of the errors.
            let mut seen = Vec::new();
            let defined = defined
                .zip(lockers)
                .filter(|(_, locker)| {
                    let identity = locker.identity();
                    let first = !seen.contains(&identity);
                    seen.push(identity);
                    first
                })
                .map(|(tokens, _)| tokens);
            quote!(#errors #(#defined)*)
        }
    }
}
