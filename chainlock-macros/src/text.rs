//! Tokens as a user would write them, for error messages and generated docs: both macros
//! quote types and paths through this one helper; and the edit distance by which both find
//! the word a misspelled one meant.

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

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// two adjacent letters, one each.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // rows[i][j]: the distance between a[..i] and b[..j].
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    rows[0] = (0..=b.len()).collect();
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitution = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + substitution);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
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
