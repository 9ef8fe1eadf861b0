//! Compile-fail snapshots: every misuse of the macros gets a clear error that points at the
//! offending tokens. Regenerate with `TRYBUILD=overwrite cargo test --test ui` and read the
//! diff (see DEVELOPMENT.md).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/**/*.rs");
}
