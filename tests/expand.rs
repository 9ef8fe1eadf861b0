//! Expansion snapshots of `chain_locker!`: every change to the generated code shows in
//! review. Regenerate with `MACROTEST=overwrite cargo test --test expand` and read the diff
//! (see DEVELOPMENT.md). Needs `cargo-expand` (the test script installs it).

#[test]
fn expand() {
    macrotest::expand("tests/expand/**/*.rs");
}
