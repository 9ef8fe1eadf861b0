//! Where the runtime crate is: the path every generated item reaches `chainlock` through.
//!
//! A user may depend on chainlock under another name (`cl = { package = "chainlock" }`):
//! then `::chainlock` names nothing in their crate. The macros read the user's `Cargo.toml`
//! (`proc-macro-crate`) and use the name found there; `crate = "path"` overrides it (for a
//! chainlock re-exported by another crate, which no `Cargo.toml` lists).

use proc_macro_crate::{Error, FoundCrate, crate_name};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote};

/// The macro asking, for the hint of the error when chainlock cannot be found.
#[derive(Clone, Copy)]
pub(crate) enum Caller {
    ChainLocker,
    ChainNode,
}

/// Parses the value of `crate = "path"` (serde's spelling) or `crate = path`.
pub(crate) fn parse_crate_path(input: syn::parse::ParseStream<'_>) -> syn::Result<syn::Path> {
    if input.peek(syn::LitStr) {
        let lit: syn::LitStr = input.parse()?;
        lit.parse().map_err(|_| {
            syn::Error::new(
                lit.span(),
                format!(
                    "expected a path to the chainlock crate, such as `crate = \"cl\"` or `crate = \"::my_dep::chainlock\"`, found {:?}",
                    lit.value()
                ),
            )
        })
    } else {
        input.call(syn::Path::parse_mod_style)
    }
}

/// The path generated code uses to reach the runtime crate: the user's `crate = "..."`, else
/// the name chainlock has in the user's `Cargo.toml` (`::chainlock`, or `::cl` when renamed).
/// `Err` when chainlock is not among the user's dependencies: the error names the fix.
pub(crate) fn crate_path(path: Option<&syn::Path>, caller: Caller) -> syn::Result<TokenStream> {
    if let Some(path) = path {
        return Ok(path.to_token_stream());
    }
    match crate_name("chainlock") {
        Ok(FoundCrate::Name(name)) => {
            let name = Ident::new(&name, Span::call_site());
            Ok(quote!(::#name))
        }
        Err(Error::CrateNotFound { path, .. }) => Err(not_found(&path.display(), caller)),
        // `Itself`: chainlock's own doc tests, integration tests and examples, each a crate
        // of its own that links chainlock under its name. Another error: no `Cargo.toml` to
        // read (a build system other than Cargo); the usual name.
        Ok(FoundCrate::Itself) | Err(_) => Ok(quote!(::chainlock)),
    }
}

/// The error for a crate whose `Cargo.toml` does not list chainlock under any name.
fn not_found(manifest: &impl std::fmt::Display, caller: Caller) -> syn::Error {
    let attribute = match caller {
        Caller::ChainLocker => {
            "`#![chain(crate = \"path::to::chainlock\")]` as the first line inside `chain_locker!`"
        }
        Caller::ChainNode => "`#[chain(crate = \"path::to::chainlock\")]` on the struct",
    };
    syn::Error::new(
        Span::call_site(),
        format!(
            "cannot find the `chainlock` crate: it is not a dependency in `{manifest}`; add it \
             (`chainlock = \"{version}\"` under `[dependencies]`, under any name), or, if this \
             crate reaches chainlock through another crate's re-export, name its path with \
             {attribute}",
            version = env!("CARGO_PKG_VERSION"),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::{Caller, crate_path};

    #[test]
    fn an_explicit_path_wins() {
        let path: syn::Path = syn::parse_quote!(::my_dep::chainlock);
        let found = crate_path(Some(&path), Caller::ChainLocker).expect("explicit");
        assert_eq!(found.to_string(), ":: my_dep :: chainlock");
    }

    /// The unit tests run with this crate's manifest, which does not depend on chainlock.
    #[test]
    fn a_crate_without_chainlock_gets_the_fix_in_the_error() {
        let error = crate_path(None, Caller::ChainNode).expect_err("not a dependency here");
        let message = error.to_string();
        assert!(
            message.contains("chainlock-macros/Cargo.toml")
                && message.contains("#[chain(crate = \"path::to::chainlock\")]"),
            "{message}"
        );
    }
}
