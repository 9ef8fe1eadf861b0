//! Shared helpers of chainlock's integration tests, examples and benchmarks (not published).

pub mod logged;
pub mod scheduler;
