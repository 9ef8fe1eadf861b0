//! Tokens as a user would write them, for error messages and generated docs: both macros
//! quote types and paths through this one helper.

use quote::ToTokens;

/// `HashMap<String, Arc<Mutex<File>>>` rather than the token printer's
/// `HashMap < String , Arc < Mutex < File > > >`.
pub(crate) fn text(tokens: &impl ToTokens) -> String {
    tokens
        .to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace("< ", "<")
        .replace(" ,", ",")
        .replace(" :: ", "::")
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn types_read_as_written() {
        let ty: syn::Type = syn::parse_quote!(std::collections::HashMap<String, Arc<Mutex<File>>>);
        assert_eq!(
            text(&ty),
            "std::collections::HashMap<String, Arc<Mutex<File>>>"
        );
        let path: syn::Path = syn::parse_quote!(chain::children);
        assert_eq!(text(&path), "chain::children");
    }
}
