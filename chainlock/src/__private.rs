//! Paths used by the code that `chainlock-macros` generates. Not public API: anything
//! here may change in any release; the macros pin this crate's exact version.
