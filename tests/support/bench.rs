//! What the benchmarks' `--instructions` modes share.

/// With the suite's `telemetry` feature, `CHAINLOCK_BENCH_TELEMETRY_SAMPLE=n` enables the
/// telemetry, sampling one acquisition in `n` (the budgets of `chainlock/docs/telemetry.md`);
/// unset, the telemetry stays compiled in and not enabled. Without the feature: nothing.
///
/// # Panics
///
/// Panics if the variable is set and not a number.
pub fn telemetry_from_env() {
    #[cfg(feature = "telemetry")]
    if let Ok(n) = std::env::var("CHAINLOCK_BENCH_TELEMETRY_SAMPLE") {
        let n = n
            .parse()
            .expect("CHAINLOCK_BENCH_TELEMETRY_SAMPLE is a number");
        chainlock::telemetry::enable(chainlock::telemetry::Config::new().sample_every(n));
    }
}
