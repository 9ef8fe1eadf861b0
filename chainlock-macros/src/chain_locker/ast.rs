//! The syntax tree of a `chain_locker!` invocation, keeping the user's tokens for spans.
//!
//! ```text
//! chain_locker!(A, shared B, C)                      // an expression: a locker value
//! chain_locker!(Volume, shared Dir*, File)           // a mixed chain: `Dir` repeats
//! chain_locker! {                                    // items: one or more named lockers
//!     /// docs
//!     pub struct ClassLocker(shared Registry, shared Lecture, Class);
//! }
//! ```

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, Token, Type, Visibility, parenthesized};

/// A whole invocation: an optional `#![chain(crate = "path")]`, then the lockers.
pub(crate) struct Input {
    /// The runtime crate's path when the dependency is renamed.
    pub(crate) krate: Option<syn::Path>,
    pub(crate) kind: Kind,
}

/// The two forms of the macro.
pub(crate) enum Kind {
    /// `chain_locker!(A, B, C)`: evaluates to a value of an unnameable locker type.
    Anonymous(Chain),
    /// `chain_locker!(pub struct Name(A, B, C); ...)`: defines named locker types.
    Named(Vec<NamedLocker>),
}

/// `#[attrs] vis struct Name(levels);`
pub(crate) struct NamedLocker {
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) ident: Ident,
    pub(crate) chain: Chain,
}

/// The levels, root first. `span_source` is what an error about the whole list points at.
pub(crate) struct Chain {
    pub(crate) levels: Vec<Level>,
    pub(crate) delimiter_span: proc_macro2::Span,
}

/// One level: modifiers as written (validated later, so that every mistake is reported
/// at once) and the level's data type.
pub(crate) struct Level {
    pub(crate) modifiers: Vec<Ident>,
    pub(crate) ty: Type,
    /// `Dir*`: the level repeats a run-time number of times (a mixed chain).
    pub(crate) repeat: Option<Token![*]>,
    /// Each modifier read as a type, for when it is one: `Registry` in `Registry Lecture`,
    /// a `,` missing.
    pub(crate) words: Vec<Type>,
}

impl Parse for Input {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let krate = parse_crate_attr(input)?;
        let kind = if starts_named_form(input) {
            let mut lockers = Vec::new();
            while !input.is_empty() {
                lockers.push(input.parse()?);
            }
            Kind::Named(lockers)
        } else {
            let levels = parse_levels(input)?;
            Kind::Anonymous(Chain {
                levels,
                delimiter_span: input.span(),
            })
        };
        Ok(Input { krate, kind })
    }
}

/// `#![chain(crate = "path")]` at the start: the runtime crate under another name.
fn parse_crate_attr(input: ParseStream<'_>) -> syn::Result<Option<syn::Path>> {
    let mut krate = None;
    for attr in input.call(Attribute::parse_inner)? {
        if !attr.path().is_ident("chain") {
            return Err(syn::Error::new_spanned(
                attr.path(),
                "expected `#![chain(crate = \"path\")]`: the only inner attribute of `chain_locker!`",
            ));
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let path = crate::krate::parse_crate_path(meta.value()?)?;
                if krate.replace(path).is_some() {
                    return Err(meta.error("duplicate `crate` argument"));
                }
                Ok(())
            } else {
                Err(meta.error("unknown argument: expected `crate = \"path\"`"))
            }
        })?;
    }
    Ok(krate)
}

/// The named form starts with an attribute, a visibility or `struct`.
fn starts_named_form(input: ParseStream<'_>) -> bool {
    input.peek(Token![#]) || input.peek(Token![pub]) || input.peek(Token![struct])
}

impl Parse for NamedLocker {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.peek(Token![#]) && input.peek2(Token![!]) {
            return Err(input.error(
                "`#![chain(crate = \"path\")]` goes first in `chain_locker!`, before the lockers",
            ));
        }
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        input.parse::<Token![struct]>().map_err(|err| {
            syn::Error::new(
                err.span(),
                "expected `struct`: a named locker is written `pub struct Name(A, B, C);`",
            )
        })?;
        let ident: Ident = input.parse()?;
        if input.peek(Token![<]) {
            return Err(input.error(
                "a chain locker takes no generic parameters: its levels are concrete types",
            ));
        }
        if !input.peek(syn::token::Paren) {
            return Err(input.error(format!(
                "expected the levels in parentheses: `struct {ident}(A, B, C);`"
            )));
        }
        let content;
        let paren = parenthesized!(content in input);
        let levels = parse_levels(&content)?;
        if !input.is_empty() {
            input
                .parse::<Token![;]>()
                .map_err(|err| syn::Error::new(err.span(), "expected `;` after a named locker"))?;
        }
        Ok(NamedLocker {
            attrs,
            vis,
            ident,
            chain: Chain {
                levels,
                delimiter_span: paren.span.join(),
            },
        })
    }
}

/// The `#[cfg(..)]` attributes among a named locker's, and the `cfg(..)`s its
/// `#[cfg_attr(predicate, ..)]`s may add (each as `#[cfg_attr(predicate, cfg(..))]`, nested
/// `cfg_attr`s kept nested, the other attributes left out): what decides whether it exists.
/// Put on the struct that carries its items too, so that a locker configured out vanishes
/// whole, as an item would (its items refer to its name).
pub(crate) fn cfgs(attrs: &[Attribute]) -> impl Iterator<Item = proc_macro2::TokenStream> {
    attrs.iter().filter_map(|attr| {
        if attr.path().is_ident("cfg") {
            return Some(quote::ToTokens::to_token_stream(attr));
        }
        let cfg = attr
            .path()
            .is_ident("cfg_attr")
            .then(|| cfg_of(&attr.meta))??;
        Some(quote::quote!(#[#cfg]))
    })
}

/// The part of `meta` that configures an item: `meta` itself if it is a `cfg(..)`; of a
/// `cfg_attr(predicate, metas..)`, the `cfg_attr(predicate, ..)` of its metas' parts (`None`
/// when no meta has one). A `cfg_attr` rustc would reject is left to rustc (`None`).
fn cfg_of(meta: &syn::Meta) -> Option<proc_macro2::TokenStream> {
    if meta.path().is_ident("cfg") {
        return Some(quote::ToTokens::to_token_stream(meta));
    }
    if !meta.path().is_ident("cfg_attr") {
        return None;
    }
    let list = meta.require_list().ok()?;
    let metas = list
        .parse_args_with(Punctuated::<syn::Meta, Token![,]>::parse_terminated)
        .ok()?;
    let mut metas = metas.into_iter();
    let predicate = metas.next()?;
    let cfgs: Vec<_> = metas.filter_map(|meta| cfg_of(&meta)).collect();
    (!cfgs.is_empty()).then(|| quote::quote!(cfg_attr(#predicate, #(#cfgs),*)))
}

impl NamedLocker {
    /// The locker's name and its `#[cfg(..)]` conditions as written: two lockers of one name
    /// are one name defined twice when these are equal, and otherwise alternatives (`cfg(a)`,
    /// `cfg(not(a))`) that rustc judges.
    pub(crate) fn identity(&self) -> String {
        let cfgs = cfgs(&self.attrs).map(|cfg| cfg.to_string());
        std::iter::once(self.ident.to_string())
            .chain(cfgs)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `level, level, ...` with an optional trailing comma.
fn parse_levels(input: ParseStream<'_>) -> syn::Result<Vec<Level>> {
    let levels = Punctuated::<Level, Token![,]>::parse_terminated(input)?;
    Ok(levels.into_iter().collect())
}

impl Parse for Level {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        if input.is_empty() || input.peek(Token![,]) {
            return Err(input.error("expected a level type"));
        }
        let mut modifiers = Vec::new();
        // An identifier is a modifier when what follows it cannot continue a type path.
        while input.peek(Ident) && !continues_path(input) {
            modifiers.push(input.parse()?);
        }
        let ty = input.parse().map_err(|err| {
            let found = input.cursor().token_tree().map(|(tt, _)| tt.to_string());
            match found {
                Some(found) => syn::Error::new(
                    err.span(),
                    format!("expected a level type, found `{found}`"),
                ),
                None => syn::Error::new(err.span(), "expected a level type after the modifiers"),
            }
        })?;
        let repeat = input.parse()?;
        let words = modifiers
            .iter()
            .map(|modifier: &Ident| syn::parse_quote!(#modifier))
            .collect();
        Ok(Level {
            modifiers,
            ty,
            repeat,
            words,
        })
    }
}

/// After an identifier: is the next token one that keeps it part of a type
/// (`,`/end/`*`: the type is that identifier; `::`, `<`: a longer path)?
fn continues_path(input: ParseStream<'_>) -> bool {
    let ahead = input.fork();
    let _: Ident = ahead.parse().expect("peeked an identifier");
    ahead.is_empty()
        || ahead.peek(Token![,])
        || ahead.peek(Token![*])
        || ahead.peek(Token![::])
        || ahead.peek(Token![<])
}
