//! Semantic rules of a parsed invocation. Every violation is collected and reported at
//! once, each pointing at the offending tokens.

use super::ast::{Chain, Input, Level};
use syn::{Ident, Type};

/// How a level is locked.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// Write / mutex access: the stage gets `&mut T`.
    Exclusive,
    /// Read access: the stage gets `&T`; the lock must have a shared mode.
    Shared,
}

impl Mode {
    /// The modifier keyword for a mode.
    pub(crate) fn from_modifier(ident: &Ident) -> Option<Mode> {
        match ident.to_string().as_str() {
            "exclusive" => Some(Mode::Exclusive),
            "shared" => Some(Mode::Shared),
            _ => None,
        }
    }
}

impl Level {
    /// The level's mode; only meaningful after validation.
    pub(crate) fn mode(&self) -> Mode {
        self.modifiers
            .iter()
            .find_map(Mode::from_modifier)
            .unwrap_or(Mode::Exclusive)
    }
}

/// Checks the whole invocation; `Err` carries every error found, combined.
pub(crate) fn validate(input: &Input) -> syn::Result<()> {
    let mut errors = Errors::default();
    match input {
        Input::Anonymous(chain) => validate_chain(chain, &mut errors),
        Input::Named(lockers) => {
            for locker in lockers {
                validate_chain(&locker.chain, &mut errors);
            }
        }
    }
    errors.finish()
}

fn validate_chain(chain: &Chain, errors: &mut Errors) {
    if chain.levels.is_empty() {
        errors.push(syn::Error::new(
            chain.delimiter_span,
            "a chain locker needs at least one level: `chain_locker!(Root, Child, ...)`",
        ));
    }
    for level in &chain.levels {
        validate_modifiers(&level.modifiers, errors);
        validate_type(&level.ty, errors);
    }
}

fn validate_modifiers(modifiers: &[Ident], errors: &mut Errors) {
    let mut mode: Option<&Ident> = None;
    for modifier in modifiers {
        if Mode::from_modifier(modifier).is_none() {
            let name = modifier.to_string();
            let hint = if name.starts_with(char::is_uppercase) {
                format!("; is a `,` missing after `{name}`?")
            } else {
                String::new()
            };
            errors.push(syn::Error::new_spanned(
                modifier,
                format!("unknown modifier `{name}`: expected `shared` or `exclusive`{hint}"),
            ));
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
}

fn validate_type(ty: &Type, errors: &mut Errors) {
    let problem = match ty {
        Type::Infer(_) => Some("a level must be a concrete type, found `_`"),
        Type::ImplTrait(_) => Some("a level must be a concrete type, found `impl Trait`"),
        Type::Never(_) => Some("`!` cannot be a level: nothing can be locked in it"),
        _ => None,
    };
    if let Some(problem) = problem {
        errors.push(syn::Error::new_spanned(ty, problem));
    }
}

/// Collects errors so that one invocation reports all its mistakes (serde's `Ctxt`).
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
