//! Semantic rules of a parsed invocation. Every violation is collected and reported at
//! once, each pointing at the offending tokens.

use super::ast::{Chain, Input, Kind, Level};
use crate::errors::Errors;
use crate::krate::{Caller, crate_path};
use crate::text::{edit_distance, text};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Attribute, Ident, Token, Type};

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
    /// The modifier that says this mode.
    fn modifier(self) -> &'static str {
        match self {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
            Mode::Upgradable => "upgradable",
            Mode::Optimistic => "optimistic",
        }
    }

    /// The modifier keyword for a mode.
    pub(crate) fn from_modifier(ident: &Ident) -> Option<Mode> {
        Mode::from_name(&ident.to_string())
    }

    fn from_name(name: &str) -> Option<Mode> {
        match name {
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
    let read = read_levels(chain, errors);
    let mut first_repeat: Option<&Read<'_>> = None;
    // The first level that is not optimistic: every optimistic level must come before it
    // (with whether its modifiers were all known: a misspelled one was already reported, and
    // the levels after it are not blamed for it).
    let mut locked: Option<(&Read<'_>, bool)> = None;
    let last = read.len().saturating_sub(1);
    let repeat = first_repeat_of(&read);
    let levels = read
        .iter()
        .enumerate()
        .map(|(index, level)| {
            let (mut mode, modifier, known) = validate_modifiers(level.modifiers, errors);
            if !known && modifier.is_none() && written_optimistic(&read[index + 1..]) {
                // An unknown modifier like no known one, above a level written `optimistic`:
                // read as `optimistic` too (optimistic levels come first), for the fallback.
                mode = Mode::Optimistic;
            }
            // A mode read from a misspelled modifier (or guessed) blames nothing else.
            let written = modifier.filter(|modifier| Mode::from_modifier(modifier).is_some());
            let mut blame = |message: String| {
                if let Some(modifier) = written {
                    errors.push(syn::Error::new_spanned(modifier, message));
                }
            };
            if mode == Mode::Optimistic {
                if index == last {
                    blame(
                        "the leaf cannot be `optimistic`: a descent ends holding the leaf's lock; \
                         make it exclusive, `shared` or `upgradable`, and the levels above it `optimistic`"
                            .to_owned(),
                    );
                    mode = Mode::Exclusive;
                } else if let Some((locked, known)) = locked {
                    if known {
                        blame(format!(
                            "an `optimistic` level cannot follow a locked one (`{}`): the \
                             optimistic levels are the first ones, from the root",
                            text(&locked.ty)
                        ));
                    }
                    mode = Mode::Shared;
                } else if let Some((_, repeated, false)) =
                    repeat.filter(|(at, _, _)| *at > index)
                {
                    blame(format!(
                        "an `optimistic` level above a locked repeated level is not supported: \
                         make the repeated level `optimistic {}*` too, or this level `shared`",
                        text(&repeated.ty)
                    ));
                    mode = Mode::Shared;
                }
            } else if locked.is_none() {
                locked = Some((level, known));
            }
            let ty = validate_type(level.ty, errors);
            usable &= ty.is_some();
            let mut repeated = level.repeat.is_some();
            if let Some(star) = level.repeat {
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
                if mode == Mode::Upgradable && written.is_some() {
                    errors.push(syn::Error::new_spanned(
                        star,
                        "a repeated level is `shared` or exclusive, not `upgradable`: \
                         walk it with `chainlock::walk::Upgrade` instead",
                    ));
                }
                if mode == Mode::Upgradable {
                    mode = Mode::Exclusive;
                }
            }
            ValidLevel {
                ty: ty.unwrap_or(level.ty),
                mode,
                repeated,
            }
        })
        .collect();
    (locked_above_repeated(levels), usable)
}

/// A level as read: as written, or one of the levels a missing `,` ran together
/// (`Registry Lecture, Class`: `Registry` is a level of its own).
struct Read<'a> {
    modifiers: &'a [Ident],
    ty: &'a Type,
    repeat: Option<&'a Token![*]>,
}

/// The levels as read: a capitalized word in a modifier's place that is no modifier (its
/// case aside) is the type of a level whose `,` is missing, reported once; the modifiers
/// after it are the next level's. A modifier written after its type (`Class exclusive`) is
/// read before it, and a modifier standing alone as a level (`optimistic, Lecture`) as the
/// next level's, each reported once, so that the fallback's locker has the levels meant.
fn read_levels<'a>(chain: &'a Chain, errors: &mut Errors) -> Vec<Read<'a>> {
    let mut read = Vec::new();
    // A modifier written as a level of its own, for the level after it.
    let mut stray: Option<&'a Ident> = None;
    for (index, level) in chain.levels.iter().enumerate() {
        let alone = modifier_word(&level.ty);
        if let (Some(word), true) = (alone, level.modifiers.is_empty())
            && let Some(error) =
                lone_modifier(word, &chain.levels[index + 1..], &mut read, &mut stray)
        {
            errors.push(error);
            continue;
        }
        // `Class exclusive`: the last word before the "type" is the type.
        let after = alone.filter(|_| level.modifiers.last().is_some_and(type_word));
        let words = level.modifiers.len() - usize::from(after.is_some());
        let mut start = 0;
        for (at, word) in level.modifiers[..words].iter().enumerate() {
            if type_word(word) {
                let name = word.to_string();
                errors.push(syn::Error::new_spanned(
                    word,
                    format!("unknown modifier `{name}`: expected `shared`, `upgradable`, `optimistic` or `exclusive`; is a `,` missing after `{name}`?"),
                ));
                read.push(Read {
                    modifiers: modifiers_or(&level.modifiers[start..at], stray.take()),
                    ty: &level.words[at],
                    repeat: None,
                });
                start = at + 1;
            }
        }
        if let Some(modifier) = after {
            let ty = &level.words[words];
            errors.push(after_its_type(modifier, ty, ""));
            read.push(Read {
                modifiers: std::slice::from_ref(modifier),
                ty,
                repeat: level.repeat.as_ref(),
            });
            continue;
        }
        read.push(Read {
            modifiers: modifiers_or(&level.modifiers[start..], stray.take()),
            ty: &level.ty,
            repeat: level.repeat.as_ref(),
        });
    }
    read
}

/// A modifier written as a level of its own (`later`: the levels after it): the next typed
/// level's if that one has no modifier of its own (noted in `stray`), reported and dropped if
/// it has; the last level's, the previous level's if that one has none (`Class, shared`);
/// `None` (a type as written: the leaf's type forgotten, or a type named `shared`, which
/// rustc tells apart) when neither fits.
fn lone_modifier<'a>(
    word: &'a Ident,
    later: &'a [Level],
    read: &mut [Read<'a>],
    stray: &mut Option<&'a Ident>,
) -> Option<syn::Error> {
    let typed_after = later
        .iter()
        .find(|next| !(next.modifiers.is_empty() && modifier_word(&next.ty).is_some()));
    let message = match typed_after {
        Some(next) if next.modifiers.is_empty() => {
            stray.get_or_insert(word);
            format!(
                "`{word}` is a modifier with no type: it goes before its level's type, without \
                 a `,` (`{word} {}`)",
                text(&next.ty)
            )
        }
        Some(next) => {
            let own: Vec<String> = next.modifiers.iter().map(ToString::to_string).collect();
            format!(
                "`{word}` is a modifier with no type, and the level after it has its own \
                 (`{} {}`): remove `{word},`",
                own.join(" "),
                text(&next.ty)
            )
        }
        None => {
            let before = read
                .last_mut()
                .filter(|before| before.modifiers.is_empty())?;
            before.modifiers = std::slice::from_ref(word);
            return Some(after_its_type(word, before.ty, ", without a `,`"));
        }
    };
    Some(syn::Error::new_spanned(word, message))
}

/// A modifier written after its level's type (`how`: how else it was written wrong).
fn after_its_type(modifier: &Ident, ty: &Type, how: &str) -> syn::Error {
    syn::Error::new_spanned(
        modifier,
        format!(
            "`{modifier}` after its type: a modifier goes before it{how} (`{modifier} {}`)",
            text(ty)
        ),
    )
}

/// Whether a word in a modifier's place is a type (capitalized, and no modifier but for its
/// case): a level whose `,` is missing, or the type a modifier was written after.
fn type_word(word: &Ident) -> bool {
    let name = word.to_string();
    capitalized(&name) && near_miss(&name).is_none()
}

/// A level's own modifiers, or the stray one written before it when it has none.
fn modifiers_or<'a>(own: &'a [Ident], stray: Option<&'a Ident>) -> &'a [Ident] {
    match stray {
        Some(stray) if own.is_empty() => std::slice::from_ref(stray),
        _ => own,
    }
}

/// The word of a type written as a lone word that is a modifier: a modifier in a type's
/// place. (Not a near miss: a lowercase type of that name would be read as one.)
fn modifier_word(ty: &Type) -> Option<&Ident> {
    let Type::Path(path) = ty else { return None };
    let ident = path.path.get_ident().filter(|_| path.qself.is_none())?;
    Mode::from_modifier(ident).is_some().then_some(ident)
}

/// Whether one of `levels` is written `optimistic` (or a near miss of it).
fn written_optimistic(levels: &[Read<'_>]) -> bool {
    levels.iter().any(|level| {
        level
            .modifiers
            .iter()
            .any(|modifier| meant(modifier) == Some(Mode::Optimistic))
    })
}

/// The repeated level, if any, its place, and whether it is written `optimistic`: optimistic
/// levels above a locked repeated level are not supported.
fn first_repeat_of<'r, 'a>(levels: &'r [Read<'a>]) -> Option<(usize, &'r Read<'a>, bool)> {
    levels
        .iter()
        .enumerate()
        .find(|(_, level)| level.repeat.is_some())
        .map(|(index, level)| {
            let optimistic = level
                .modifiers
                .iter()
                .any(|modifier| meant(modifier) == Some(Mode::Optimistic));
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
/// every modifier was known. An unknown modifier that is a near miss of a known one
/// (`optimisitc`, `shraed`, `upgradeable`) is reported once and read as that one, so that
/// the fallback's locker has the mode the user meant and its uses add no errors.
fn validate_modifiers<'a>(
    modifiers: &'a [Ident],
    errors: &mut Errors,
) -> (Mode, Option<&'a Ident>, bool) {
    let mut mode: Option<(&Ident, Mode)> = None;
    let mut known = true;
    for modifier in modifiers {
        let Some(exact) = Mode::from_modifier(modifier) else {
            known = false;
            let name = modifier.to_string();
            let meant = near_miss(&name);
            let hint = meant.map_or_else(String::new, |meant| {
                format!("; did you mean `{}`?", meant.modifier())
            });
            errors.push(syn::Error::new_spanned(
                modifier,
                format!("unknown modifier `{name}`: expected `shared`, `upgradable`, `optimistic` or `exclusive`{hint}"),
            ));
            if let Some(meant) = meant {
                mode.get_or_insert((modifier, meant));
            }
            continue;
        };
        if let Some((first, _)) = mode {
            let message = if first == modifier {
                format!("duplicate `{modifier}` modifier")
            } else if Mode::from_modifier(first).is_none() {
                // The first was a near miss, already reported: this one is what the level says.
                mode = Some((modifier, exact));
                continue;
            } else {
                format!("conflicting modifiers: `{first}` and `{modifier}`; a level has one mode")
            };
            errors.push(syn::Error::new_spanned(modifier, message));
        } else {
            mode = Some((modifier, exact));
        }
    }
    (
        mode.map_or(Mode::Exclusive, |(_, mode)| mode),
        mode.map(|(modifier, _)| modifier),
        known,
    )
}

fn capitalized(name: &str) -> bool {
    name.starts_with(char::is_uppercase)
}

/// The mode a modifier says, or the one it most likely misspells.
fn meant(modifier: &Ident) -> Option<Mode> {
    Mode::from_modifier(modifier).or_else(|| near_miss(&modifier.to_string()))
}

/// The mode whose modifier an unknown one most likely misspells: the nearest by edit
/// distance (letters inserted, removed, replaced or swapped, case ignored), within a third
/// of its length (rustc's bound for "a similar name exists"). A capitalized word is more
/// likely a type (a `,` missing) unless it differs only by case.
fn near_miss(name: &str) -> Option<Mode> {
    let capitalized = capitalized(name);
    let name = name.to_lowercase();
    if capitalized {
        return Mode::from_name(&name);
    }
    let bound = (name.chars().count() / 3).max(1);
    [
        Mode::Shared,
        Mode::Upgradable,
        Mode::Optimistic,
        Mode::Exclusive,
    ]
    .into_iter()
    .map(|mode| (edit_distance(&name, mode.modifier()), mode))
    .filter(|(distance, _)| *distance <= bound)
    .min_by_key(|(distance, _)| *distance)
    .map(|(_, mode)| mode)
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

#[cfg(test)]
mod tests {
    use super::{Mode, near_miss};
    use crate::text::edit_distance;

    #[test]
    fn a_misspelled_modifier_is_read_as_the_one_it_misses() {
        assert_eq!(edit_distance("optimisitc", "optimistic"), 1);
        assert_eq!(near_miss("optimisitc"), Some(Mode::Optimistic));
        assert_eq!(near_miss("optimstic"), Some(Mode::Optimistic));
        assert_eq!(near_miss("shraed"), Some(Mode::Shared));
        assert_eq!(near_miss("sharde"), Some(Mode::Shared));
        assert_eq!(near_miss("upgradeable"), Some(Mode::Upgradable));
        assert_eq!(near_miss("exlcusive"), Some(Mode::Exclusive));
        assert_eq!(near_miss("Shared"), Some(Mode::Shared));
    }

    #[test]
    fn a_word_like_no_modifier_and_a_type_are_not_read_as_one() {
        assert_eq!(near_miss("reading"), None);
        assert_eq!(near_miss("mut"), None);
        // A capitalized word is a type before a missing `,` unless only its case differs.
        assert_eq!(near_miss("Share"), None);
        assert_eq!(near_miss("Registry"), None);
    }
}
