//! Code generation: `ChainNode` (is the node closed?) and, per child type, the `Children`,
//! `ChildrenBy` and `ChildrenRef` impls, delegating the lookup to the field's container.

use super::validate::{ChildField, Closed, ValidNode};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

pub(crate) fn expand(node: &ValidNode<'_>) -> TokenStream {
    let krate = &node.krate;
    let ident = &node.input.ident;
    let (impl_generics, type_generics, where_clause) = node.input.generics.split_for_impl();
    let is_closed = match &node.closed {
        Closed::Never => TokenStream::new(),
        Closed::Field(field) => quote! {
            #[inline]
            fn is_closed(&self) -> #krate::__private::bool {
                self.#field
            }
        },
        Closed::AtomicField(field) => quote! {
            #[inline]
            fn is_closed(&self) -> #krate::__private::bool {
                #krate::__private::AtomicBool::load(&self.#field, #krate::__private::Acquire)
            }
        },
        Closed::Method(method) => {
            // `closed = is_full` names a method of the node; a longer path is used as written.
            let span = method.span();
            let method = if method.get_ident().is_some() {
                quote_spanned!(span=> Self::#method)
            } else {
                quote!(#method)
            };
            // Spanned at the user's path: a method with the wrong signature is reported there.
            let call = quote_spanned! {span=>
                let closed: #krate::__private::bool = #method(self);
                closed
            };
            quote! {
                #[inline]
                fn is_closed(&self) -> #krate::__private::bool {
                    #call
                }
            }
        }
    };
    let children = node.children.iter().map(|child| children_impl(node, child));
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::ChainNode for #ident #type_generics #where_clause {
                #is_closed
            }
            #(#children)*
        };
    }
}

fn children_impl(node: &ValidNode<'_>, child: &ChildField<'_>) -> TokenStream {
    let krate = &node.krate;
    let ident = &node.input.ident;
    let (impl_generics, type_generics, where_clause) = node.input.generics.split_for_impl();
    let (field, child_ty) = (child.ident, &child.child);
    // Spanned at the field's type, so that a container without `ChildContainer` is reported there.
    let container = child.container;
    let container_trait =
        quote_spanned!(container.span()=> <#container as #krate::__private::ChildContainer>);
    // The items are spanned there too (a missing `ChildContainer` is reported once, at the
    // field), and so is the check that the container's lock locks the child type.
    let items = quote_spanned! {container.span()=>
        type Key = #container_trait::Key;
        type Lock = #container_trait::Lock;

        #[inline]
        fn child(&self, key: &Self::Key) -> #krate::__private::Option<#krate::__private::Arc<Self::Lock>> {
            // The container's lock, not `Self::Lock`: two fields of one child type spelled two
            // ways make `Self::Lock` ambiguous, and the check would add an error per field.
            #krate::__private::assert_child_lock::<#child_ty, #container_trait::Lock>();
            #container_trait::lookup(&self.#field, key)
        }
    };
    // Borrowed lookups (`K: Borrow<Q>`, as `HashMap::get`): an impl for every `Q` the
    // container can be searched by; vacuous for a container without `LookupBy`.
    let mut by_generics = node.input.generics.clone();
    by_generics
        .params
        .push(syn::parse_quote!(__Q: ?#krate::__private::Sized));
    by_generics
        .make_where_clause()
        .predicates
        .push(syn::parse_quote!(#container: #krate::__private::LookupBy<__Q>));
    let (by_impl_generics, _, by_where_clause) = by_generics.split_for_impl();
    // Lookups by reference, lent while an epoch guard lives (optimistic descents): an impl
    // for every `Q` the container lends children by; vacuous for a container without
    // `LookupRef`.
    let mut ref_generics = node.input.generics.clone();
    ref_generics
        .params
        .push(syn::parse_quote!(__Q: ?#krate::__private::Sized));
    ref_generics
        .make_where_clause()
        .predicates
        .push(syn::parse_quote!(#container: #krate::__private::LookupRef<__Q>));
    let (ref_impl_generics, _, ref_where_clause) = ref_generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::__private::Children<#child_ty> for #ident #type_generics #where_clause {
            #items
        }

        #[automatically_derived]
        impl #ref_impl_generics #krate::__private::ChildrenRef<#child_ty, __Q> for #ident #type_generics #ref_where_clause {
            type Lock = <#container as #krate::__private::LookupRef<__Q>>::Lock;

            #[inline]
            fn child_ref<'__g>(
                &'__g self,
                key: &__Q,
                guard: &'__g #krate::__private::EpochGuard,
            ) -> #krate::__private::Option<&'__g #krate::__private::Arc<Self::Lock>> {
                #krate::__private::LookupRef::<__Q>::lookup_ref(&self.#field, key, guard)
            }
        }

        #[automatically_derived]
        impl #by_impl_generics #krate::__private::ChildrenBy<#child_ty, __Q> for #ident #type_generics #by_where_clause {
            type Lock = <#container as #krate::__private::LookupBy<__Q>>::Lock;

            #[inline]
            fn child_by(&self, key: &__Q) -> #krate::__private::Option<#krate::__private::Arc<Self::Lock>> {
                #krate::__private::LookupBy::<__Q>::lookup_by(&self.#field, key)
            }
        }
    }
}

/// What a failed derive expands to besides its errors: a `ChainNode` impl that never
/// closes, so that the node's uses in lockers report nothing more (one error, no cascade).
pub(crate) fn fallback(input: &syn::DeriveInput, krate: &TokenStream) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #krate::ChainNode for #ident #type_generics #where_clause {}
    }
}
