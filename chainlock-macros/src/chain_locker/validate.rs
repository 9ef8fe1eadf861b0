//! Semantic rules of a parsed invocation. Every violation is collected and reported at
//! once, each pointing at the offending tokens.

use super::ast::{Chain, Input, Kind, Level};
use crate::errors::Errors;
use crate::krate::{Caller, crate_path};
use crate::text::text;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Attribute, Ident, Type};

/// How a level is locked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// Write / mutex access: the stage gets `&mut T`.
    Exclusive,
    /// Read access: the stage gets `&T`; the lock must have a shared mode.
    Shared,
    /// The upgradable read (lock_api's `upgradable_read_arc`): plain readers still pass;
    /// the stage gets `&mut Upgradable<L>`, which reads as `&T` and upgrades in place.
    Upgradable,
    /// Optimistic lock coupling (a `HybridLock`): the stage gets `&T` and the epoch guard,
    /// and may run once per pass; only a prefix of the chain from the root, never the leaf.
    Optimistic,
}

impl Mode {
    /// The modifier keyword for a mode.
    pub(crate) fn from_modifier(ident: &Ident) -> Option<Mode> {
        match ident.to_string().as_str() {
            "exclusive" => Some(Mode::Exclusive),
            "shared" => Some(Mode::Shared),
            "upgradable" => Some(Mode::Upgradable),
            "optimistic" => Some(Mode::Optimistic),
            _ => None,
        }
    }
}

/// A validated invocation: what `expand` needs and nothing more.
pub(crate) struct Valid<'a> {
    /// The runtime crate's path (`::chainlock` unless renamed).
    pub(crate) krate: TokenStream,
    /// The expression form: one locker, whose value the invocation evaluates to.
    pub(crate) anonymous: bool,
    pub(crate) lockers: Vec<ValidLocker<'a>>,
}

/// One locker type to generate.
pub(crate) struct ValidLocker<'a> {
    pub(crate) attrs: &'a [Attribute],
    pub(crate) vis: TokenStream,
    pub(crate) ident: Ident,
    /// Root first; at least one.
    pub(crate) levels: Vec<ValidLevel<'a>>,
    /// Whether the levels are good enough to generate the methods from, even when the
    /// invocation has errors (a mistyped modifier, `&T`, `Arc<Mutex<T>>` for `T`): then the
    /// fallback still defines them, so that uses of the locker add no errors of their own.
    pub(crate) usable: bool,
}

/// A level with its mode decided.
pub(crate) struct ValidLevel<'a> {
    pub(crate) ty: &'a Type,
    pub(crate) mode: Mode,
    /// `Dir*`: walked a run-time number of times (at most one level per chain).
    pub(crate) repeated: bool,
}

/// The identifier of the locker type of the expression form, defined in a block of its own
/// (no user code names it): what rustc's notes ("required by a bound in
/// `_::<impl ChainLocker>::run`"), `Debug` and the telemetry's level names call it;
/// `__ChainLocker` when a level's type names a `ChainLocker` of the user's.
fn anonymous_locker(chain: &Chain) -> Ident {
    fn names(tokens: TokenStream, name: &str) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Ident(ident) => ident == name,
            TokenTree::Group(group) => names(group.stream(), name),
            _ => false,
        })
    }
    let name = "ChainLocker";
    let taken = chain
        .levels
        .iter()
        .any(|level| names(level.ty.to_token_stream(), name));
    let name = if taken { "__ChainLocker" } else { name };
    Ident::new(name, Span::call_site())
}

/// Checks the whole invocation; `Err` carries every error found, combined, and the best
/// reading of the invocation despite them (for the fallback).
pub(crate) fn validate(input: &Input) -> Result<Valid<'_>, (syn::Error, Valid<'_>)> {
    let mut errors = Errors::default();
    let krate = crate_path(input.krate.as_ref(), Caller::ChainLocker)
        .map_err(|not_found| errors.push(not_found))
        .ok();
    let mut lockers = match &input.kind {
        Kind::Anonymous(chain) => {
            let (levels, usable) = validate_chain(chain, &mut errors);
            vec![ValidLocker {
                attrs: &[],
                vis: TokenStream::new(),
                ident: anonymous_locker(chain),
                levels,
                usable,
            }]
        }
        Kind::Named(lockers) => {
            let mut seen: Vec<String> = Vec::new();
            lockers
                .iter()
                .map(|locker| {
                    let identity = locker.identity();
                    let duplicate = seen.contains(&identity);
                    if duplicate {
                        errors.push(syn::Error::new_spanned(
                            &locker.ident,
                            format!(
                                "a locker named `{}` is already defined in this `chain_locker!`: give each locker its own name",
                                locker.ident
                            ),
                        ));
                    }
                    seen.push(identity);
                    let (levels, usable) = validate_chain(&locker.chain, &mut errors);
                    ValidLocker {
                        attrs: &locker.attrs,
                        vis: locker.vis.to_token_stream(),
                        ident: locker.ident.clone(),
                        levels,
                        // A second definition of a name is dropped from the fallback.
                        usable: usable && !duplicate,
                    }
                })
                .collect()
        }
    };
    if krate.is_none() {
        // Nothing can be generated without the runtime crate: bare structs only.
        for locker in &mut lockers {
            locker.usable = false;
        }
    }
    let valid = Valid {
        krate: krate.unwrap_or_else(|| quote::quote!(::chainlock)),
        anonymous: matches!(input.kind, Kind::Anonymous(_)),
        lockers,
    };
    match errors.finish() {
        Ok(()) => Ok(valid),
        Err(errors) => Err((errors, valid)),
    }
}

/// The levels, and whether they are usable despite the errors found (see
/// [`ValidLocker::usable`]).
fn validate_chain<'a>(chain: &'a Chain, errors: &mut Errors) -> (Vec<ValidLevel<'a>>, bool) {
    let mut usable = !chain.levels.is_empty();
    if chain.levels.is_empty() {
        errors.push(syn::Error::new(
            chain.delimiter_span,
            "a chain locker needs at least one level: `chain_locker!(Root, Child, ...)`",
        ));
    }
    let mut first_repeat: Option<&Level> = None;
    // The first level that is not optimistic: every optimistic level must come before it
    // (with whether its modifiers were all known: a misspelled one was already reported, and
    // the levels after it are not blamed for it).
    let mut locked: Option<(&Level, bool)> = None;
    let last = chain.levels.len().saturating_sub(1);
    let repeat = first_repeat_of(chain);
    let levels = chain
        .levels
        .iter()
        .enumerate()
        .map(|(index, level): (usize, &Level)| {
            let (mut mode, modifier, known) = validate_modifiers(&level.modifiers, errors);
            if mode == Mode::Optimistic {
                let modifier = modifier.expect("a mode other than exclusive is written");
                if index == last {
                    errors.push(syn::Error::new_spanned(
                        modifier,
                        "the leaf cannot be `optimistic`: a descent ends holding the leaf's lock; \
                         make it exclusive, `shared` or `upgradable`, and the levels above it `optimistic`",
                    ));
                    mode = Mode::Exclusive;
                } else if let Some((locked, known)) = locked {
                    if known {
                        errors.push(syn::Error::new_spanned(
                            modifier,
                            format!(
                                "an `optimistic` level cannot follow a locked one (`{}`): the \
                                 optimistic levels are the first ones, from the root",
                                text(&locked.ty)
                            ),
                        ));
                    }
                    mode = Mode::Shared;
                } else if let Some((_, repeated, false)) =
                    repeat.filter(|(at, _, _)| *at > index)
                {
                    errors.push(syn::Error::new_spanned(
                        modifier,
                        format!(
                            "an `optimistic` level above a locked repeated level is not supported: \
                             make the repeated level `optimistic {}*` too, or this level `shared`",
                            text(&repeated.ty)
                        ),
                    ));
                    mode = Mode::Shared;
                }
            } else if locked.is_none() {
                locked = Some((level, known));
            }
            let ty = validate_type(&level.ty, errors);
            usable &= ty.is_some();
            let mut repeated = level.repeat.is_some();
            if let Some(star) = &level.repeat {
                if let Some(first) = first_repeat {
                    errors.push(syn::Error::new_spanned(
                        star,
                        format!(
                            "a chain has at most one repeated level: `{}*` already repeats; \
                             write this level once, or walk it with `chainlock::walk`",
                            text(&first.ty)
                        ),
                    ));
                    repeated = false;
                } else {
                    first_repeat = Some(level);
                }
                if mode == Mode::Upgradable {
                    errors.push(syn::Error::new_spanned(
                        star,
                        "a repeated level is `shared` or exclusive, not `upgradable`: \
                         walk it with `chainlock::walk::Upgrade` instead",
                    ));
                    mode = Mode::Exclusive;
                }
            }
            ValidLevel {
                ty: ty.unwrap_or(&level.ty),
                mode,
                repeated,
            }
        })
        .collect();
    (locked_above_repeated(levels), usable)
}

/// The repeated level, if any, its place, and whether it is written `optimistic`: optimistic
/// levels above a locked repeated level are not supported.
fn first_repeat_of(chain: &Chain) -> Option<(usize, &Level, bool)> {
    chain
        .levels
        .iter()
        .enumerate()
        .find(|(_, level)| level.repeat.is_some())
        .map(|(index, level)| {
            let optimistic = level
                .modifiers
                .iter()
                .any(|modifier| Mode::from_modifier(modifier) == Some(Mode::Optimistic));
            (index, level, optimistic)
        })
}

/// A repeated level that is not optimistic after all (an error made it locked: a repeated
/// leaf): the optimistic levels above it are read as `shared`, for the fallback only.
fn locked_above_repeated(mut levels: Vec<ValidLevel<'_>>) -> Vec<ValidLevel<'_>> {
    if let Some(repeated) = levels.iter().position(|level| level.repeated)
        && levels[repeated].mode != Mode::Optimistic
    {
        for level in &mut levels[..repeated] {
            if level.mode == Mode::Optimistic {
                level.mode = Mode::Shared;
            }
        }
    }
    levels
}

/// The level's mode, the modifier that says it (`None`: exclusive by default), and whether
/// every modifier was known.
fn validate_modifiers<'a>(
    modifiers: &'a [Ident],
    errors: &mut Errors,
) -> (Mode, Option<&'a Ident>, bool) {
    let mut mode: Option<&Ident> = None;
    let mut known = true;
    for modifier in modifiers {
        if Mode::from_modifier(modifier).is_none() {
            known = false;
            let name = modifier.to_string();
            let hint = if name.starts_with(char::is_uppercase) {
                format!("; is a `,` missing after `{name}`?")
            } else {
                String::new()
            };
            let missing_comma = !hint.is_empty();
            errors.push(syn::Error::new_spanned(
                modifier,
                format!("unknown modifier `{name}`: expected `shared`, `upgradable`, `optimistic` or `exclusive`{hint}"),
            ));
            if missing_comma {
                // What follows is most likely the next level's: one error for the one
                // mistake, not a "duplicate" or "conflicting" modifier across two levels.
                break;
            }
        } else if let Some(first) = mode {
            let message = if first == modifier {
                format!("duplicate `{modifier}` modifier")
            } else {
                format!("conflicting modifiers: `{first}` and `{modifier}`; a level has one mode")
            };
            errors.push(syn::Error::new_spanned(modifier, message));
        } else {
            mode = Some(modifier);
        }
    }
    (
        mode.and_then(Mode::from_modifier)
            .unwrap_or(Mode::Exclusive),
        mode,
        known,
    )
}

/// Reports what is wrong with a level type; returns the type to generate code for: the type
/// itself, the data type the user meant (`Registry` for `&Registry` or `Arc<Mutex<Registry>>`),
/// or `None` when no type can stand in for it.
fn validate_type<'a>(ty: &'a Type, errors: &mut Errors) -> Option<&'a Type> {
    let meant = match ty {
        Type::Infer(_) | Type::ImplTrait(_) | Type::Never(_) => None,
        Type::Reference(reference) => Some(innermost(&reference.elem)),
        _ => Some(innermost(ty)),
    };
    let problem = match ty {
        Type::Infer(_) => Some("a level must be a concrete type, found `_`".to_owned()),
        Type::ImplTrait(_) => {
            Some("a level must be a concrete type, found `impl Trait`".to_owned())
        }
        Type::Never(_) => Some("`!` cannot be a level: nothing can be locked in it".to_owned()),
        Type::Reference(reference) => Some(format!(
            "a level is the data type behind a lock, not a reference: write `{}`",
            text(&reference.elem)
        )),
        Type::Path(path) if path.qself.is_none() => {
            let last = path
                .path
                .segments
                .last()
                .map(|segment| segment.ident.to_string());
            match last.as_deref() {
                Some("Arc" | "Mutex" | "RwLock" | "ReentrantMutex" | "FairMutex") => Some(format!(
                    "a level is the data type inside the lock, not the lock: write `{}`",
                    text(innermost(ty))
                )),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(problem) = problem {
        errors.push(syn::Error::new_spanned(ty, problem));
        meant.filter(|meant| find_self(meant.to_token_stream()).is_none())
    } else if let Some(self_token) = find_self(ty.to_token_stream()) {
        errors.push(syn::Error::new(
            self_token.span(),
            "`Self` cannot name a level: inside `chain_locker!` it would mean the locker itself; write the level's type by name",
        ));
        None
    } else {
        Some(ty)
    }
}

/// The data inside `Arc<Mutex<T>>`, `RwLock<T>`, ...: the last type argument, repeatedly.
fn innermost(ty: &Type) -> &Type {
    if let Type::Path(path) = ty
        && let Some(segment) = path.path.segments.last()
        && matches!(
            segment.ident.to_string().as_str(),
            "Arc" | "Mutex" | "RwLock" | "ReentrantMutex" | "FairMutex"
        )
        && let syn::PathArguments::AngleBracketed(arguments) = &segment.arguments
        && let Some(syn::GenericArgument::Type(inner)) = arguments.args.last()
    {
        return innermost(inner);
    }
    ty
}

/// The first `Self` token anywhere in a type.
fn find_self(tokens: TokenStream) -> Option<Ident> {
    tokens.into_iter().find_map(|tree| match tree {
        TokenTree::Ident(ident) if ident == "Self" => Some(ident),
        TokenTree::Group(group) => find_self(group.stream()),
        _ => None,
    })
}
