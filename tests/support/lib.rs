//! Test instrumentation of chainlock's integration tests, examples and benchmarks (not
//! published): locks that log what they do, a watchdog against hangs, and the baselines the benchmarks and tests
//! compare against. The scheduling service is not here: it is the workspace member
//! `scheduler/` (package `chainlock-scheduler`).

pub mod bench;
pub mod logged;
pub mod rooms_baseline;
pub mod watchdog;
