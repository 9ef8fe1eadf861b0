//! Code generation: `ChainNode` (is the node closed?), per child field a `ChildField` impl
//! (the field of that child type), and once per node the `Children`, `ChildrenBy` and
//! `ChildrenRef` impls, generic over the child type, delegating the lookup to its field's
//! container.

use super::validate::{ChildField, Closed, ValidNode};
use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
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
    let fields = node.children.iter().map(|child| field_impl(node, child));
    let lookups = (!node.children.is_empty()).then(|| lookup_impls(node));
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::ChainNode for #ident #type_generics #where_clause {
                #is_closed
            }
            #(#fields)*
            #lookups
        };
    }
}

/// The one impl per child field: `ChildField<C>`, the field that holds the `C` locks. Spanned
/// at the field, so that two fields of one child type (`Class` and an alias of it, or a
/// generic `T` beside `u32`) are one conflict, reported at the two fields.
fn field_impl(node: &ValidNode<'_>, child: &ChildField<'_>) -> TokenStream {
    let krate = &node.krate;
    let ident = &node.input.ident;
    let (impl_generics, type_generics, where_clause) = node.input.generics.split_for_impl();
    let (field, child_ty, container) = (&child.member, &child.child, child.container);
    let header = respan(
        quote! {
            impl #impl_generics #krate::__private::ChildField<#child_ty> for #ident #type_generics #where_clause
        },
        field.span(),
    );
    // Spanned at the field's type, so that a container without `ChildContainer`, or whose
    // lock does not lock the child type (`ChildField::Container`'s bound), is reported there.
    // A `pub` node's private container is one error, at the associated type, and no warning
    // per method: `field` names it `Self::Container`, and `field_ref`, which names it as
    // written (`Self::Container` in its bound would be unknown to rustc, and one error more
    // at each field, when two fields' impls conflict), allows the lints.
    let items = quote_spanned! {container.span()=>
        type Container = #container;

        #[inline]
        fn field(&self) -> &Self::Container {
            &self.#field
        }

        #[inline]
        #[allow(private_interfaces, private_bounds)]
        fn field_ref<'__g, __Q: ?#krate::__private::Sized>(
            &'__g self,
            key: &__Q,
            guard: &'__g #krate::__private::EpochGuard,
        ) -> #krate::__private::Option<
            &'__g #krate::__private::Arc<<#container as #krate::__private::LookupRef<__Q>>::Lock>,
        >
        where
            #container: #krate::__private::LookupRef<__Q>,
        {
            #krate::__private::LookupRef::<__Q>::lookup_ref(&self.#field, key, guard)
        }
    };
    // The braces too: the impl's span, which a conflict reports, runs from `impl` to `}`.
    let mut body = Group::new(Delimiter::Brace, items);
    body.set_span(field.span());
    quote! {
        #[automatically_derived]
        #header #body
    }
}

/// `Children`, `ChildrenRef` and `ChildrenBy`, once per node and generic over the child type
/// `__C`: each goes to the field [`field_impl`] names for `__C`.
fn lookup_impls(node: &ValidNode<'_>) -> TokenStream {
    let krate = &node.krate;
    let ident = &node.input.ident;
    let (_, type_generics, _) = node.input.generics.split_for_impl();
    let field = quote!(<Self as #krate::__private::ChildField<__C>>);
    let container = quote!(#field::Container);
    // `__C` with `Self: ChildField<__C>` and a bound on its field's container; the lookups
    // by a borrowed key (`K: Borrow<Q>`, as `HashMap::get`) or by reference (lent while an
    // epoch guard lives: optimistic descents) also get an impl for every `__Q` the container
    // is searched by.
    let generics = |key: bool, container_bound: TokenStream| {
        let mut generics = node.input.generics.clone();
        generics
            .params
            .push(syn::parse_quote!(__C: ?#krate::__private::Sized));
        if key {
            generics
                .params
                .push(syn::parse_quote!(__Q: ?#krate::__private::Sized));
        }
        let predicates = &mut generics.make_where_clause().predicates;
        predicates.push(syn::parse_quote!(Self: #krate::__private::ChildField<__C>));
        predicates.push(syn::parse_quote!(#container: #container_bound));
        generics
    };
    let children = generics(false, quote!(#krate::__private::ChildContainer));
    let by = generics(true, quote!(#krate::__private::LookupBy<__Q>));
    let by_ref = generics(true, quote!(#krate::__private::LookupRef<__Q>));
    let (children_generics, _, children_where) = children.split_for_impl();
    let (by_generics, _, by_where) = by.split_for_impl();
    let (ref_generics, _, ref_where) = by_ref.split_for_impl();
    // At the node's name, not at the derive: a node without children of the type a chain
    // asks for is then told so at the node, without rustc's advice for derived impls.
    let children_header = respan(
        quote!(impl #children_generics #krate::__private::Children<__C> for #ident #type_generics #children_where),
        ident.span(),
    );
    quote! {
        #[automatically_derived]
        #children_header {
            type Key = <#container as #krate::__private::ChildContainer>::Key;
            type Lock = <#container as #krate::__private::ChildContainer>::Lock;

            #[inline]
            fn child(&self, key: &Self::Key) -> #krate::__private::Option<#krate::__private::Arc<Self::Lock>> {
                #krate::__private::ChildContainer::lookup(#field::field(self), key)
            }
        }

        #[automatically_derived]
        impl #ref_generics #krate::__private::ChildrenRef<__C, __Q> for #ident #type_generics #ref_where {
            type Lock = <#container as #krate::__private::LookupRef<__Q>>::Lock;

            #[inline]
            fn child_ref<'__g>(
                &'__g self,
                key: &__Q,
                guard: &'__g #krate::__private::EpochGuard,
            ) -> #krate::__private::Option<&'__g #krate::__private::Arc<Self::Lock>> {
                #field::field_ref(self, key, guard)
            }
        }

        #[automatically_derived]
        impl #by_generics #krate::__private::ChildrenBy<__C, __Q> for #ident #type_generics #by_where {
            type Lock = <#container as #krate::__private::LookupBy<__Q>>::Lock;

            #[inline]
            fn child_by(&self, key: &__Q) -> #krate::__private::Option<#krate::__private::Arc<Self::Lock>> {
                #krate::__private::LookupBy::<__Q>::lookup_by(#field::field(self), key)
            }
        }
    }
}

/// `tokens`, every one of them (inside groups too) at `span`: an impl header that a conflict
/// reports at the field, not at the derive.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(group.span().located_at(span));
                token = TokenTree::Group(inner);
            } else {
                // Where errors point only: a name keeps where it is looked up (a `$crate`
                // path from another crate's macro must still resolve there).
                token.set_span(token.span().located_at(span));
            }
            token
        })
        .collect()
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
