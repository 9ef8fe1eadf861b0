//! Semantic rules of the derive: what a closed marker and a child field may be, and that
//! the fields descended by type are unambiguous. Every violation is reported at once.

use super::ast::{Errors, Node, Role};
use crate::krate::{Caller, crate_path};
use crate::text::text;
use syn::{GenericArgument, Ident, Member, Path, PathArguments, Type};

/// A node that passed validation: what `expand` needs and nothing more.
pub(crate) struct ValidNode<'a> {
    pub(crate) input: &'a syn::DeriveInput,
    /// The runtime crate's path (`::chainlock` unless renamed).
    pub(crate) krate: proc_macro2::TokenStream,
    pub(crate) closed: Closed,
    /// The child fields found by child type (one per child type).
    pub(crate) children: Vec<ChildField<'a>>,
}

/// How the node tells whether it is closed.
pub(crate) enum Closed {
    Never,
    Field(Member),
    /// An `AtomicBool` field, loaded with acquire.
    AtomicField(Member),
    Method(Path),
}

pub(crate) struct ChildField<'a> {
    /// The field (a tuple struct's by index: the derive reports it, and reads it still).
    pub(crate) member: Member,
    pub(crate) container: &'a Type,
    pub(crate) child: Type,
}

/// The node, or its errors with what of it could be read (`None` without the runtime
/// crate): a failed derive still implements `ChainNode` and the `Children` of the fields it
/// understood, so that uses of those add no error.
pub(crate) fn validate<'a>(
    node: &Node<'a>,
) -> Result<ValidNode<'a>, (syn::Error, Option<Box<ValidNode<'a>>>)> {
    let mut errors = Errors::default();
    let mut closed = node
        .closed_method
        .clone()
        .map_or(Closed::Never, Closed::Method);
    // (child type as text, field, explicitly `default`)
    let mut candidates: Vec<(String, ChildField<'_>, bool)> = Vec::new();

    for field in node.fields.iter().filter(|field| !field.guessed) {
        match &field.role {
            Role::Plain => {}
            Role::Conflict(span) => errors.push(syn::Error::new(
                *span,
                "a field is either `#[chain(children)]` or `#[chain(closed)]`, once",
            )),
            Role::Closed(span) => {
                let atomic = is_atomic_bool(&field.field.ty);
                if !atomic && !is_bool(&field.field.ty) {
                    errors.push(syn::Error::new_spanned(
                        &field.field.ty,
                        format!(
                            "`#[chain(closed)]` needs a `bool` or `AtomicBool` field, found `{}`; for another test write `#[chain(closed = method)]` on the struct",
                            text(&field.field.ty)
                        ),
                    ));
                } else if !matches!(closed, Closed::Never) {
                    errors.push(syn::Error::new(
                        *span,
                        "a node has one closed marker; this is a second one",
                    ));
                } else if atomic {
                    closed = Closed::AtomicField(field.member.clone());
                } else {
                    closed = Closed::Field(field.member.clone());
                }
            }
            Role::Children(args) => {
                let child = args
                    .child
                    .clone()
                    .or_else(|| container_child(&field.field.ty).cloned());
                let Some(child) = child else {
                    errors.push(syn::Error::new_spanned(
                        &field.field.ty,
                        unreadable_container(&field.field.ty),
                    ));
                    continue;
                };
                let key = text(&child);
                let entry = ChildField {
                    member: field.member.clone(),
                    container: &field.field.ty,
                    child,
                };
                candidates.push((key, entry, args.default.is_some()));
            }
        }
    }
    read_guessed(node, &mut closed, &mut candidates);
    let children = choose_by_type(&candidates, &mut errors);
    let krate = crate_path(node.krate.as_ref(), Caller::ChainNode)
        .map_err(|not_found| errors.push(not_found))
        .ok();
    let valid = krate.map(|krate| ValidNode {
        input: node.input,
        krate,
        closed,
        children,
    });
    match errors.finish() {
        Ok(()) => Ok(valid.expect("the crate was found, else an error was pushed")),
        Err(errors) => Err((errors, valid.map(Box::new))),
    }
}

/// The fields whose attributes had an error (already reported), read after the others so
/// that they take nothing from them: the guessed role if it fits the field, else children if
/// the field is a container the derive reads (`#[chain(closd)]` on a map), else nothing;
/// never a second error.
fn read_guessed<'a>(
    node: &Node<'a>,
    closed: &mut Closed,
    candidates: &mut Vec<(String, ChildField<'a>, bool)>,
) {
    for field in node.fields.iter().filter(|field| field.guessed) {
        let ty = &field.field.ty;
        let atomic = is_atomic_bool(ty);
        if matches!(field.role, Role::Closed(_))
            && matches!(*closed, Closed::Never)
            && (atomic || is_bool(ty))
        {
            *closed = if atomic {
                Closed::AtomicField(field.member.clone())
            } else {
                Closed::Field(field.member.clone())
            };
            continue;
        }
        let (named, default) = match &field.role {
            Role::Children(args) => (args.child.clone(), args.default.is_some()),
            _ => (None, false),
        };
        let Some(child) = named.or_else(|| container_child(ty).cloned()) else {
            continue;
        };
        let key = text(&child);
        if candidates.iter().any(|(other, _, _)| *other == key) {
            continue;
        }
        let entry = ChildField {
            member: field.member.clone(),
            container: ty,
            child,
        };
        candidates.push((key, entry, default));
    }
}

/// Why a child field's container shows no child type: the message names the missing lock
/// or `Arc` where the container is one the derive reads, else what it can read.
fn unreadable_container(ty: &Type) -> String {
    let shown = text(ty);
    let elements = type_arguments(ty).and_then(|(container, arguments)| {
        let at = match container.to_string().as_str() {
            "HashMap" | "BTreeMap" | "EpochMap" => 1,
            "Vec" | "Option" | "EpochVec" | "Arc" => 0,
            _ => return None,
        };
        Some((container.to_string(), arguments.get(at).copied()?))
    });
    let Some((container, element)) = elements else {
        return format!(
            "cannot see the child type in `{shown}`: the container must be `HashMap<K, Arc<L>>`, `BTreeMap<K, Arc<L>>`, `Vec<Arc<L>>`, `Option<Arc<L>>`, `Arc<L>`, `EpochMap<K, L>`, `EpochVec<L>` or implement `chainlock::chain::ChildContainer` (then name the child with `#[chain(children, child = Child)]`)"
        );
    };
    let element_text = text(element);
    let epoch = container.starts_with("Epoch");
    let wants_arc = !epoch && container != "Arc";
    // The container with `element` replaced (the last occurrence: the element is the last
    // type argument).
    let with = |fixed: &str| match shown.rfind(&element_text) {
        Some(at) => format!(
            "{}{fixed}{}",
            &shown[..at],
            &shown[at + element_text.len()..]
        ),
        None => fixed.to_owned(),
    };
    match type_arguments(element) {
        // `Vec<Box<Mutex<Class>>>`: another pointer where the `Arc` goes.
        Some((ident, arguments)) if wants_arc && (ident == "Box" || ident == "Rc") => {
            let inner = arguments.first().map_or(element_text.clone(), text);
            format!(
                "a child in `{shown}` must be held by an `Arc` (a locker hands out owned guards), not a `{ident}`: `{}`",
                with(&format!("Arc<{inner}>"))
            )
        }
        // `Vec<Mutex<Class>>`: the lock is there, its `Arc` is not.
        Some((ident, _)) if wants_arc && ident != "Arc" && lock_data(element).is_some() => format!(
            "a child in `{shown}` must be held by an `Arc` (a locker hands out owned guards): `{}`",
            with(&format!("Arc<{element_text}>"))
        ),
        // `EpochMap<u8, Dir>`, `Vec<Arc<Dir>>`, `Vec<Arc<ClassLock>>`: no lock to be seen.
        arc => {
            let in_arc = matches!(arc, Some((ident, _)) if ident == "Arc");
            let child = if in_arc {
                type_arguments(element)
                    .and_then(|(_, arguments)| arguments.first().copied())
                    .map_or(element_text.clone(), text)
            } else {
                element_text.clone()
            };
            let lock = if epoch { "HybridLock" } else { "Mutex" };
            let fixed = if wants_arc || in_arc {
                format!("Arc<{lock}<{child}>>")
            } else {
                format!("{lock}<{child}>")
            };
            format!(
                "cannot see the child type in `{shown}`: `{child}` is not written as a lock; if it is one under another name (a type alias), name the child: `#[chain(children, child = Child)]`; if the lock is missing, write it: `{}` (or another lock)",
                with(&fixed)
            )
        }
    }
}

/// One field per child type: the only one, or the one marked `default`.
fn choose_by_type<'a>(
    candidates: &[(String, ChildField<'a>, bool)],
    errors: &mut Errors,
) -> Vec<ChildField<'a>> {
    let mut children = Vec::new();
    let mut handled: Vec<String> = Vec::new();
    for (key, _, _) in candidates {
        if handled.contains(key) {
            continue;
        }
        handled.push(key.clone());
        let same: Vec<&(String, ChildField<'_>, bool)> = candidates
            .iter()
            .filter(|(other, _, _)| other == key)
            .collect();
        let defaults: Vec<_> = same.iter().filter(|(_, _, default)| *default).collect();
        match (same.len(), defaults.len()) {
            (1, _) | (_, 1) => {
                let chosen = if same.len() == 1 {
                    same[0]
                } else {
                    defaults[0]
                };
                children.push(ChildField {
                    member: chosen.1.member.clone(),
                    container: chosen.1.container,
                    child: chosen.1.child.clone(),
                });
            }
            (_, 0) => {
                let names: Vec<String> = same
                    .iter()
                    .map(|(_, field, _)| format!("`{}`", text(&field.member)))
                    .collect();
                errors.push(syn::Error::new_spanned(
                    &same[1].1.member,
                    format!(
                        "fields {} hold children of the same type `{key}`, so a descent by type cannot tell them apart: mark the one to descend by type `#[chain(children, default)]` and reach the others by name (`node.{}.lookup(&key)`)",
                        names.join(" and "),
                        text(&same[1].1.member)
                    ),
                ));
            }
            _ => errors.push(syn::Error::new_spanned(
                &defaults[1].1.member,
                format!("only one field holding `{key}` children can be the `default`"),
            )),
        }
    }
    children
}

fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.is_ident("bool"))
}

/// `AtomicBool`, by any path (`std::sync::atomic::AtomicBool`, `core::..`, imported).
fn is_atomic_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none()
        && path.path.segments.last().is_some_and(|last| last.ident == "AtomicBool" && last.arguments.is_none()))
}

/// The type arguments of the last segment of a path type: `HashMap<K, V>` gives `[K, V]`.
fn type_arguments(ty: &Type) -> Option<(&Ident, Vec<&Type>)> {
    let Type::Path(path) = ty else { return None };
    let segment = path.path.segments.last()?;
    let arguments = match &segment.arguments {
        PathArguments::AngleBracketed(arguments) => arguments
            .args
            .iter()
            .filter_map(|argument| match argument {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((&segment.ident, arguments))
}

/// The child type of a container the derive can read: the `Child` of
/// `HashMap<K, Arc<Lock<Child>>>`, `Vec<Arc<Lock<Child>>>`, `Arc<Lock<Child>>`, ...
fn container_child(ty: &Type) -> Option<&Type> {
    let (container, arguments) = type_arguments(ty)?;
    let arc = match container.to_string().as_str() {
        "HashMap" | "BTreeMap" => *arguments.get(1)?,
        "Vec" | "Option" => *arguments.first()?,
        "Arc" => ty,
        // chainlock's epoch containers hold `Arc<L>` of the lock type they name.
        "EpochMap" => return lock_data(arguments.get(1)?),
        "EpochVec" => return lock_data(arguments.first()?),
        _ => return None,
    };
    let (arc_ident, arc_arguments) = type_arguments(arc)?;
    if arc_ident != "Arc" {
        return None;
    }
    lock_data(arc_arguments.first()?)
}

/// The lock's last type argument is the data: `Mutex<C>`, `lock_api::Mutex<R, C>`.
fn lock_data(lock: &Type) -> Option<&Type> {
    let (_, lock_arguments) = type_arguments(lock)?;
    lock_arguments.last().copied()
}
