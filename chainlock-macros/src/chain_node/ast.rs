//! The derive input as the derive sees it: the struct, its child fields and its closed
//! marker, each keeping the user's tokens for spans. Unknown or malformed `#[chain(..)]`
//! arguments are errors here, each reported once, beside the node read from what was
//! understood; semantic rules are checked in `validate`.

pub(crate) use crate::errors::Errors;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Field, Fields, Index, Member, Path, Type};

/// A struct deriving `ChainNode`.
pub(crate) struct Node<'a> {
    pub(crate) input: &'a DeriveInput,
    /// Struct-level `#[chain(closed = path)]`: a method telling whether the node is closed.
    pub(crate) closed_method: Option<Path>,
    /// Struct-level `#[chain(crate = "path")]`: the runtime crate's path, when renamed.
    pub(crate) krate: Option<Path>,
    pub(crate) fields: Vec<NodeField<'a>>,
}

/// A field and what its `#[chain(..)]` attributes say of it.
pub(crate) struct NodeField<'a> {
    pub(crate) field: &'a Field,
    /// Its name, or a tuple struct's index (an error, but the fields are read still).
    pub(crate) member: Member,
    pub(crate) role: Role,
    /// Its attributes had an error (reported here): the role is what they most likely
    /// meant (`closd` is `closed`), read without errors of its own (`validate::read_guessed`).
    pub(crate) guessed: bool,
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
    /// The node, with the errors of its `#[chain(..)]` attributes: a field whose attributes
    /// are wrong does not take the others down (their `Children` impls are still generated,
    /// so that their uses add no errors); a tuple struct is an error, its fields read by index.
    /// `Err` when there is no node to read (an enum, a union, a unit struct).
    pub(crate) fn from_syn(input: &'a DeriveInput) -> syn::Result<(Self, Errors)> {
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
        let mut errors = Errors::default();
        let fields: Vec<&Field> = match &data.fields {
            Fields::Named(named) => named.named.iter().collect(),
            Fields::Unnamed(fields) => {
                // Reported, and the fields read by index all the same: their uses add no error.
                errors.push(syn::Error::new_spanned(
                    fields,
                    "`ChainNode` needs named fields: child fields are chosen by name, as in `struct Lecture { classes: .. }`",
                ));
                fields.unnamed.iter().collect()
            }
            Fields::Unit => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "`ChainNode` needs named fields: a unit struct has no children and cannot be closed",
                ));
            }
        };
        let (closed_method, krate) = parse_struct_attrs(&input.attrs, &mut errors);
        let fields = fields
            .into_iter()
            .enumerate()
            .map(|(index, field)| {
                let (role, guessed) = parse_field_attrs(&field.attrs, &mut errors);
                let member = match &field.ident {
                    Some(ident) => Member::Named(ident.clone()),
                    None => Member::Unnamed(Index {
                        index: u32::try_from(index).expect("fewer than 2^32 fields"),
                        span: field.span(),
                    }),
                };
                NodeField {
                    field,
                    member,
                    role,
                    guessed,
                }
            })
            .collect();
        let node = Node {
            input,
            closed_method,
            krate,
            fields,
        };
        Ok((node, errors))
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

/// The field's role and whether it is a guess (an attribute had an error, reported here).
fn parse_field_attrs(attrs: &[Attribute], errors: &mut Errors) -> (Role, bool) {
    let mut role = Role::Plain;
    let mut guessed = false;
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
        let mut failed = false;
        let result = attr.parse_nested_meta(|meta| {
            let span = meta.path.span();
            let (argument, wrong) = read_argument(&meta, children.is_some(), errors)?;
            failed |= wrong;
            match argument {
                Argument::Child(ty) => child = Some((span, *ty)),
                Argument::Flag(Word::Children) => {
                    children.get_or_insert(ChildrenArgs {
                        child: None,
                        default: None,
                    });
                }
                Argument::Flag(Word::Closed) => closed = Some(span),
                Argument::Flag(Word::Default) => default = Some(span),
                Argument::Unknown => {}
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
            failed = true;
        }
        guessed |= failed;
        let this = match (children, closed) {
            (Some(mut args), None) => {
                args.child = child.take().map(|(_, ty)| ty);
                args.default = default.take();
                Role::Children(Box::new(args))
            }
            (None, Some(span)) => Role::Closed(span),
            (Some(_), Some(span)) => Role::Conflict(span),
            // An unknown argument, already reported, is all the attribute says.
            (None, None) if failed => continue,
            (None, None) => {
                errors.push(syn::Error::new_spanned(
                    attr,
                    "expected `children` or `closed` in `#[chain(..)]`",
                ));
                continue;
            }
        };
        // Of a guessed role, only what was certainly wrong is reported.
        if !failed {
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
        }
        role = match role {
            Role::Plain => this,
            _ => Role::Conflict(attr.span()),
        };
    }
    (role, guessed)
}

/// One argument of a field's `#[chain(..)]`: a wrong one is reported, and read as what it
/// most likely meant.
enum Argument {
    Flag(Word),
    Child(Box<Type>),
    /// Near no argument: read as nothing.
    Unknown,
}

/// Reads one argument; `true` with it when it was wrong (reported). `after_children`: the
/// attribute already says `children`, so a lone `child` does not mean it.
fn read_argument(
    meta: &ParseNestedMeta<'_>,
    after_children: bool,
    errors: &mut Errors,
) -> syn::Result<(Argument, bool)> {
    let name = crate::text::text(&meta.path);
    if meta.path.is_ident("child") {
        if meta.input.peek(syn::Token![=]) {
            return Ok((Argument::Child(Box::new(meta.value()?.parse()?)), false));
        }
        // `child` alone: `children` misspelled, or the type forgotten.
        skip_value(meta)?;
        let hint = if after_children {
            ""
        } else {
            "; did you mean `children`?"
        };
        errors.push(meta.error(format!(
            "`child` names the child type: `child = Type`{hint}"
        )));
        return Ok((Argument::Flag(Word::Children), true));
    }
    if let Some(word) = Word::exact(&name) {
        if meta.input.is_empty() || meta.input.peek(syn::Token![,]) {
            return Ok((Argument::Flag(word), false));
        }
        // `children()`, `closed = true`: a flag takes no value.
        skip_value(meta)?;
        errors.push(meta.error(format!(
            "`{name}` takes no arguments; did you mean `{name}`?"
        )));
        return Ok((Argument::Flag(word), true));
    }
    let meant = Word::near_miss(&name);
    let hint = meant.map_or_else(String::new, |meant| {
        format!("; did you mean `{}`?", meant.name())
    });
    skip_value(meta)?;
    errors.push(meta.error(format!(
        "unknown `chain` argument `{name}`: expected `children`, `closed`, `child = Type` or `default`{hint}"
    )));
    Ok((meant.map_or(Argument::Unknown, Argument::Flag), true))
}

/// A flag argument of a field's `#[chain(..)]`.
#[derive(Clone, Copy)]
enum Word {
    Children,
    Closed,
    Default,
}

impl Word {
    fn exact(name: &str) -> Option<Self> {
        match name {
            "children" => Some(Self::Children),
            "closed" => Some(Self::Closed),
            "default" => Some(Self::Default),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Children => "children",
            Self::Closed => "closed",
            Self::Default => "default",
        }
    }

    /// The flag an unknown argument most likely misspells: the nearest by edit distance,
    /// case ignored, within a third of its length (as `chain_locker!`'s modifiers); a near
    /// miss of `child` (`childs`) is one of `children`.
    fn near_miss(name: &str) -> Option<Self> {
        let name = name.to_lowercase();
        let bound = (name.chars().count() / 3).max(1);
        [
            ("children", Self::Children),
            ("child", Self::Children),
            ("closed", Self::Closed),
            ("default", Self::Default),
        ]
        .into_iter()
        .map(|(word, meant)| (crate::text::edit_distance(&name, word), meant))
        .filter(|(distance, _)| *distance <= bound)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, meant)| meant)
    }
}

/// Skips what follows an argument's name up to the next `,`: `(..)` or `= ..`.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    meta.input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            if matches!(&tree, proc_macro2::TokenTree::Punct(punct) if punct.as_char() == ',') {
                break;
            }
            rest = next;
        }
        Ok(((), rest))
    })
}

/// The `crate = "path"` argument alone, read leniently for the fallback of a failed derive.
pub(crate) fn crate_attr(input: &DeriveInput) -> Option<Path> {
    parse_struct_attrs(&input.attrs, &mut Errors::default()).1
}

#[cfg(test)]
mod tests {
    use super::Word;

    fn meant(name: &str) -> Option<&'static str> {
        Word::near_miss(name).map(Word::name)
    }

    #[test]
    fn a_misspelled_flag_is_read_as_the_one_it_misses() {
        for name in ["childs", "Children", "chidlren", "childern", "CHILDREN"] {
            assert_eq!(meant(name), Some("children"), "{name}");
        }
        for name in ["closd", "close", "Closed", "cloesd"] {
            assert_eq!(meant(name), Some("closed"), "{name}");
        }
        assert_eq!(meant("defualt"), Some("default"));
    }

    #[test]
    fn a_word_near_no_flag_is_not_read_as_one() {
        for name in ["gone", "removed", "key", "skip", "crate"] {
            assert_eq!(meant(name), None, "{name}");
        }
    }
}
