//! The error collector both macros share: every mistake of one invocation is reported at
//! once, each at its own tokens (serde's `Ctxt`).

/// Collects errors; [`Errors::finish`] combines them into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
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

/// The path generated code uses to reach the runtime crate: `::chainlock`, or the user's.
pub(crate) fn crate_path(path: Option<&syn::Path>) -> proc_macro2::TokenStream {
    path.map_or_else(
        || quote::quote!(::chainlock),
        quote::ToTokens::to_token_stream,
    )
}
