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
