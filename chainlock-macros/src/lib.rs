//! Procedural macros of [chainlock](https://docs.rs/chainlock). Use them through `chainlock`.
