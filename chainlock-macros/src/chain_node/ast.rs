//! The derive input as the derive sees it: the struct, its child fields and its closed
//! marker, each keeping the user's tokens for spans. Unknown or malformed `#[chain(..)]`
//! arguments are errors here; semantic rules are checked in `validate`.

pub(crate) use crate::errors::Errors;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Field, Fields, Ident, Path, Type};

/// A struct deriving `ChainNode`.
pub(crate) struct Node<'a> {
    pub(crate) input: &'a DeriveInput,
    /// Struct-level `#[chain(closed = path)]`: a method telling whether the node is closed.
    pub(crate) closed_method: Option<Path>,
    /// Struct-level `#[chain(crate = "path")]`: the runtime crate's path, when renamed.
    pub(crate) krate: Option<Path>,
    pub(crate) fields: Vec<NodeField<'a>>,
}

/// A named field and what its `#[chain(..)]` attributes say of it.
pub(crate) struct NodeField<'a> {
    pub(crate) field: &'a Field,
    pub(crate) ident: &'a Ident,
    pub(crate) role: Role,
}

/// What a field is to the derive.
pub(crate) enum Role {
    /// No `#[chain]` attribute.
    Plain,
    /// `#[chain(closed)]`.
    Closed(proc_macro2::Span),
    /// `#[chain(children, ..)]`.
    Children(Box<ChildrenArgs>),
    /// Several roles on one field; an error reported by `validate`.
    Conflict(proc_macro2::Span),
}

/// The arguments of `#[chain(children, ..)]`.
pub(crate) struct ChildrenArgs {
    /// `child = Type`: the child type, when the container is not one the derive can read.
    pub(crate) child: Option<Type>,
    /// `default`: among fields with the same child type, the one found by type.
    pub(crate) default: Option<proc_macro2::Span>,
}

impl<'a> Node<'a> {
    pub(crate) fn from_syn(input: &'a DeriveInput) -> syn::Result<Self> {
        let data = match &input.data {
            Data::Struct(data) => data,
            Data::Enum(data) => {
                return Err(syn::Error::new(
                    data.enum_token.span,
                    "`ChainNode` can only be derived for structs with named fields, not enums",
                ));
            }
            Data::Union(data) => {
                return Err(syn::Error::new(
                    data.union_token.span,
                    "`ChainNode` can only be derived for structs with named fields, not unions",
                ));
            }
        };
        let named = match &data.fields {
            Fields::Named(named) => named,
            Fields::Unnamed(fields) => {
                return Err(syn::Error::new_spanned(
                    fields,
                    "`ChainNode` needs named fields: child fields are chosen by name, as in `struct Lecture { classes: .. }`",
                ));
            }
            Fields::Unit => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "`ChainNode` needs named fields: a unit struct has no children and cannot be closed",
                ));
            }
        };
        let mut errors = Errors::default();
        let (closed_method, krate) = parse_struct_attrs(&input.attrs, &mut errors);
        let fields = named
            .named
            .iter()
            .map(|field| NodeField {
                field,
                ident: field.ident.as_ref().expect("named field"),
                role: parse_field_attrs(&field.attrs, &mut errors),
            })
            .collect();
        errors.finish()?;
        Ok(Node {
            input,
            closed_method,
            krate,
            fields,
        })
    }
}

fn parse_struct_attrs(attrs: &[Attribute], errors: &mut Errors) -> (Option<Path>, Option<Path>) {
    let mut closed = None;
    let mut krate = None;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("chain")) {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("closed") {
                let method: Path = meta.value()?.parse()?;
                if method.is_ident("is_closed") {
                    return Err(syn::Error::new_spanned(
                        &method,
                        "`closed = is_closed` would call the derived `ChainNode::is_closed` itself and recurse forever: give the inherent method another name, e.g. `closed = is_cancelled`",
                    ));
                }
                if closed.replace(method).is_some() {
                    return Err(meta.error("duplicate `closed` argument"));
                }
                Ok(())
            } else if meta.path.is_ident("crate") {
                let path = crate::krate::parse_crate_path(meta.value()?)?;
                if krate.replace(path).is_some() {
                    return Err(meta.error("duplicate `crate` argument"));
                }
                Ok(())
            } else {
                Err(meta.error(format!(
                    "unknown `chain` argument `{}` on a struct: expected `closed = method` or `crate = \"path\"`",
                    crate::text::text(&meta.path)
                )))
            }
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    (closed, krate)
}

fn parse_field_attrs(attrs: &[Attribute], errors: &mut Errors) -> Role {
    let mut role = Role::Plain;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("chain")) {
        if let syn::Meta::Path(path) = &attr.meta {
            errors.push(syn::Error::new_spanned(
                path,
                "expected `#[chain(children)]` or `#[chain(closed)]`",
            ));
            continue;
        }
        let mut children: Option<ChildrenArgs> = None;
        let mut closed = None;
        let mut child = None;
        let mut default = None;
        let result = attr.parse_nested_meta(|meta| {
            let span = meta.path.span();
            if meta.path.is_ident("children") {
                children = Some(ChildrenArgs { child: None, default: None });
            } else if meta.path.is_ident("closed") {
                closed = Some(span);
            } else if meta.path.is_ident("child") {
                child = Some((span, meta.value()?.parse::<Type>()?));
            } else if meta.path.is_ident("default") {
                default = Some(span);
            } else {
                return Err(meta.error(format!(
                    "unknown `chain` argument `{}`: expected `children`, `closed`, `child = Type` or `default`",
                    crate::text::text(&meta.path)
                )));
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
            continue;
        }
        let this = match (children, closed) {
            (Some(mut args), None) => {
                args.child = child.take().map(|(_, ty)| ty);
                args.default = default.take();
                Role::Children(Box::new(args))
            }
            (None, Some(span)) => Role::Closed(span),
            (Some(_), Some(span)) => Role::Conflict(span),
            (None, None) => {
                errors.push(syn::Error::new_spanned(
                    attr,
                    "expected `children` or `closed` in `#[chain(..)]`",
                ));
                continue;
            }
        };
        for (span, name) in child
            .map(|(span, _)| (span, "child"))
            .into_iter()
            .chain(default.map(|span| (span, "default")))
        {
            errors.push(syn::Error::new(
                span,
                format!("`{name}` only applies to `#[chain(children, ..)]`"),
            ));
        }
        role = match role {
            Role::Plain => this,
            _ => Role::Conflict(attr.span()),
        };
    }
    role
}

/// The `crate = "path"` argument alone, read leniently for the fallback of a failed derive.
pub(crate) fn crate_attr(input: &DeriveInput) -> Option<Path> {
    parse_struct_attrs(&input.attrs, &mut Errors::default()).1
}
