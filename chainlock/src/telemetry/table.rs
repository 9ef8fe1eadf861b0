//! [`Report::table`]: the statistics as a plain-text table in the spirit of Linux's
//! `/proc/lock_stat`.

use super::{LockStats, Report, SiteStats, Summary};
use std::fmt::Write as _;
use std::time::Duration;

/// The column headings, and the width of the first (the lock's name; longer names widen it).
const HEADINGS: [&str; 14] = [
    "class",
    "contentions",
    "wait-min",
    "wait-max",
    "wait-total",
    "wait-avg",
    "wait-p50",
    "wait-p99",
    "acquisitions",
    "hold-min",
    "hold-max",
    "hold-total",
    "hold-avg",
    "hold-p50",
];

impl Report {
    /// The statistics as a `lock_stat`-style text table, hottest lock first (by total
    /// wait); what [`Display`](std::fmt::Display) prints.
    ///
    /// One row per lock class (a chain level, a walk depth, a key, a stripe, a room, a
    /// distributed name), hottest first (by total wait): `contentions` (acquisitions that had to
    /// wait), the wait's min/max/total/avg and p50/p99, `acquisitions`, the hold's
    /// min/max/total/avg and p50/p99. Under each row, as `lock_stat` prints them, up to four
    /// waiter sites (`waiters:`, by total wait) and four holder sites (`holders:`, by the delay
    /// charged to them as Go's mutex profile does), each as `count [total] file:line`; and, for
    /// async guards, the hold across `.await`.
    ///
    /// Under sampling ([`Config::sample_every`](super::Config::sample_every)), each sampled
    /// acquisition counts for the sampling rate in `acquisitions`, `contentions` and the site
    /// counts (estimates of the whole), and the times describe the sample.
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::telemetry::{self, Config};
    ///
    /// telemetry::enable(Config::new());
    /// let table = telemetry::report().table();
    /// assert!(table.starts_with("class"));
    /// ```
    #[must_use]
    pub fn table(&self) -> String {
        let mut locks: Vec<&LockStats> = self.locks.iter().collect();
        locks.sort_by(|a, b| {
            b.wait
                .total
                .cmp(&a.wait.total)
                .then(b.acquisitions.cmp(&a.acquisitions))
        });
        let names: Vec<String> = locks.iter().map(|lock| lock.lock.to_string()).collect();
        let width = names
            .iter()
            .map(|name| name.chars().count())
            .chain([HEADINGS[0].len()])
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        let _ = write!(out, "{:<width$}", HEADINGS[0]);
        for heading in &HEADINGS[1..] {
            let _ = write!(out, " {heading:>12}");
        }
        let _ = writeln!(out, " {:>12}", "hold-p99");
        for (lock, name) in locks.iter().zip(&names) {
            row(&mut out, lock, name, width);
        }
        out
    }
}

/// One lock's row and its site lines.
fn row(out: &mut String, lock: &LockStats, name: &str, width: usize) {
    let _ = write!(out, "{name:<width$} {:>12}", lock.contended);
    summary_cells(out, &lock.wait);
    let _ = write!(out, " {:>12}", lock.acquisitions);
    summary_cells(out, &lock.hold);
    out.push('\n');
    sites(out, "waiters", &lock.waiter_sites);
    sites(out, "holders", &lock.holder_sites);
    if lock.hold_across_await.count > 0 {
        let held = &lock.hold_across_await;
        let _ = writeln!(
            out,
            "  held across .await: {} holds, avg {}, p99 {}, max {}",
            held.count,
            time(average(held)),
            time(held.p99),
            time(held.max),
        );
    }
    if lock.waiters_at_release > 0 {
        let _ = writeln!(
            out,
            "  waiters left at sampled releases: {}",
            lock.waiters_at_release
        );
    }
}

/// min, max, total, avg, p50, p99 of `summary` (`-` for all six when it is empty).
fn summary_cells(out: &mut String, summary: &Summary) {
    if summary.count == 0 {
        for _ in 0..6 {
            let _ = write!(out, " {:>12}", "-");
        }
        return;
    }
    for value in [
        summary.min,
        summary.max,
        summary.total,
        average(summary),
        summary.p50,
        summary.p99,
    ] {
        let _ = write!(out, " {:>12}", time(value));
    }
}

/// `  waiters: 12 [3.1ms] src/main.rs:40, 2 [120µs] src/lib.rs:9`.
fn sites(out: &mut String, what: &str, sites: &[SiteStats]) {
    if sites.is_empty() {
        return;
    }
    let _ = write!(out, "  {what}:");
    for (index, site) in sites.iter().enumerate() {
        let separator = if index == 0 { "" } else { "," };
        let _ = write!(
            out,
            "{separator} {} [{}] {}:{}",
            site.count,
            time(site.total),
            site.site.file(),
            site.site.line()
        );
    }
    out.push('\n');
}

/// The mean of a summary.
fn average(summary: &Summary) -> Duration {
    summary.mean()
}

/// A duration in three significant figures with its unit: `850ns`, `12.3µs`, `1.50ms`, `2.00s`.
fn time(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    let seconds = duration.as_secs_f64();
    let (value, unit) = if nanos < 1_000_000 {
        (seconds * 1e6, "µs")
    } else if nanos < 1_000_000_000 {
        (seconds * 1e3, "ms")
    } else {
        (seconds, "s")
    };
    let decimals = match value {
        v if v < 10.0 => 2,
        v if v < 100.0 => 1,
        _ => 0,
    };
    format!("{value:.decimals$}{unit}")
}

#[cfg(test)]
mod tests {
    use super::super::{LockName, LockStats, Report, SiteStats, Summary};
    use super::time;
    use std::panic::Location;
    use std::time::Duration;

    fn summary(count: u64, micros: [u64; 5]) -> Summary {
        let [min, max, total, p50, p99] = micros.map(Duration::from_micros);
        Summary {
            count,
            total,
            min,
            max,
            p50,
            p99,
            ..Summary::default()
        }
    }

    fn level(level: usize, wait: Summary, acquisitions: u64) -> LockStats {
        LockStats {
            lock: LockName::Level {
                locker: "ClassLocker",
                level,
                name: "Lecture",
            },
            acquisitions,
            contended: wait.count,
            wait,
            hold: summary(2, [10, 30, 40, 10, 30]),
            hold_across_await: Summary::default(),
            waiters_at_release: 0,
            waiter_sites: vec![SiteStats {
                site: Location::caller(),
                count: 3,
                total: Duration::from_micros(1_500),
            }],
            holder_sites: Vec::new(),
        }
    }

    #[test]
    fn rows_hottest_first_with_their_sites() {
        let report = Report {
            sample_every: 1,
            locks: vec![
                level(2, summary(1, [5, 5, 5, 5, 5]), 7),
                level(1, summary(3, [100, 1_000, 1_500, 400, 1_000]), 9),
            ],
        };
        let table = report.table();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("class"), "{table}");
        for heading in [
            "contentions",
            "wait-p99",
            "acquisitions",
            "hold-avg",
            "hold-p99",
        ] {
            assert!(lines[0].contains(heading), "{heading}: {table}");
        }
        // Level 1 waited longer in total: first.
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            cells[..5],
            ["ClassLocker", "level", "1", "(Lecture)", "3"],
            "{table}"
        );
        assert_eq!(
            cells[5..11],
            ["100µs", "1.00ms", "1.50ms", "500µs", "400µs", "1.00ms"],
            "{table}"
        );
        assert_eq!(cells[11], "9", "acquisitions: {table}");
        assert_eq!(
            cells[12..],
            ["10.0µs", "30.0µs", "40.0µs", "20.0µs", "10.0µs", "30.0µs"],
            "{table}"
        );
        let site = report.locks[1].waiter_sites[0].site;
        assert_eq!(
            lines[2],
            format!("  waiters: 3 [1.50ms] {}:{}", site.file(), site.line()),
            "{table}"
        );
        assert!(lines[3].starts_with("ClassLocker level 2"), "{table}");
        assert!(report.to_string() == table, "Display is the table");
    }

    #[test]
    fn times_have_three_figures() {
        assert_eq!(time(Duration::from_nanos(850)), "850ns");
        assert_eq!(time(Duration::from_nanos(12_345)), "12.3µs");
        assert_eq!(time(Duration::from_micros(1_500)), "1.50ms");
        assert_eq!(time(Duration::from_secs(2)), "2.00s");
        assert_eq!(time(Duration::from_secs(250)), "250s");
    }
}
