//! The macros used by a crate that does not depend on chainlock (only on this crate):
//! one error each, naming the fix. These cases live here, not in the suite's `tests/ui`,
//! because there chainlock is always a dependency. Regenerate with
//! `TRYBUILD=overwrite cargo test -p chainlock-macros --test ui` and read the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
