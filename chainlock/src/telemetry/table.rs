//! [`Report::table`]: the statistics as a plain-text table in the spirit of Linux's
//! `/proc/lock_stat`, in one scale: estimates of every acquisition.

use super::report::{LockStats, OtherSites, Report, SiteStats, Summary};
use std::fmt::Write as _;
use std::time::Duration;

/// The column headings after the first (the lock's name, as wide as the longest name):
/// what a reader asks first (how long, how often) on the left.
const HEADINGS: [&str; 10] = [
    "wait-total",
    "contentions",
    "wait-avg",
    "wait-p99",
    "wait-max",
    "acquisitions",
    "hold-total",
    "hold-avg",
    "hold-p99",
    "hold-max",
];

impl Report {
    /// The statistics as a `lock_stat`-style text table, hottest lock first (by total
    /// wait); what [`Display`](std::fmt::Display) prints.
    ///
    /// The first line says the scale. Every count and total is an estimate of all
    /// acquisitions (with [`Config::sample_every`](super::Config::sample_every)`(n)`, each
    /// sampled acquisition counts `n` times and its times `n` times; with `n = 1` they are
    /// exact); the other times (average, p99, max) describe single waits and holds. One row
    /// per lock class (a chain level, a walk depth, a key, a stripe, a room, a distributed
    /// name): `wait-total` (the time acquisitions spent queued behind a holder), the
    /// `contentions` (acquisitions that queued), and of their waits the mean (`wait-avg`),
    /// the 99th percentile and the longest (of the sampled ones); the `acquisitions`, and the
    /// holds' total, mean, 99th percentile and longest.
    ///
    /// Under each row, as `lock_stat` prints them, the waiter sites (`waiters:`, by total
    /// wait, the four with most, then the rest summed as `other sites`: together, the row's
    /// `contentions` and `wait-total`) and the holder sites (`holders:`, by the delay charged
    /// to them as Go's mutex profile does: the waiting each release ended; under sampling, an
    /// underestimate), each as `count [total] file:line`; and, for async guards, the hold
    /// across `.await`; for a level or depth of an optimistic descent, its restarts and
    /// fallbacks (`optimistic restarts:`). The estimates assume one sampling rate while recording (change it
    /// with [`reset`](super::reset)).
    ///
    /// # Examples
    ///
    /// ```
    /// use chainlock::telemetry::{self, Config};
    ///
    /// telemetry::enable(Config::new());
    /// let table = telemetry::report().table();
    /// assert!(table.starts_with("every acquisition recorded"));
    /// assert!(table.lines().nth(1).unwrap().starts_with("class"));
    /// ```
    #[must_use]
    pub fn table(&self) -> String {
        let scale = u64::from(self.sample_every.max(1));
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
            .chain(["class".len()])
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        if scale == 1 {
            out.push_str("every acquisition recorded: exact counts and times\n");
        } else {
            let _ = writeln!(
                out,
                "1 acquisition in {scale} sampled: counts and totals are estimates of all \
                 acquisitions (each sample counted {scale} times); avg, p99 and max are of \
                 single waits and holds"
            );
        }
        let _ = write!(out, "{:<width$}", "class");
        for heading in HEADINGS {
            let _ = write!(out, " {heading:>12}");
        }
        out.push('\n');
        for (lock, name) in locks.iter().zip(&names) {
            row(&mut out, lock, name, width, scale);
        }
        out
    }
}

/// `duration` times the sampling rate `scale`.
fn scaled(duration: Duration, scale: u64) -> Duration {
    duration.saturating_mul(u32::try_from(scale).unwrap_or(u32::MAX))
}

/// One lock's row and its site lines.
fn row(out: &mut String, lock: &LockStats, name: &str, width: usize, scale: u64) {
    let wait_total = scaled(lock.wait.total, scale);
    let per_contention = if lock.contended == 0 {
        "-".to_owned()
    } else {
        let nanos = wait_total.as_nanos() / u128::from(lock.contended);
        time(Duration::from_nanos(
            u64::try_from(nanos).unwrap_or(u64::MAX),
        ))
    };
    let _ = write!(
        out,
        "{name:<width$} {:>12} {:>12} {per_contention:>12}",
        time(wait_total),
        lock.contended,
    );
    match contended_p99(&lock.wait) {
        Some(p99) => cells(out, &[p99, lock.wait.max], 1),
        None => cells(out, &[Duration::ZERO; 2], 0),
    }
    let _ = write!(out, " {:>12}", lock.acquisitions);
    if lock.hold.count == 0 {
        cells(out, &[Duration::ZERO; 4], 0);
    } else {
        let hold = &lock.hold;
        cells(
            out,
            &[scaled(hold.total, scale), hold.mean(), hold.p99, hold.max],
            hold.count,
        );
    }
    out.push('\n');
    sites(out, "waiters", &lock.waiter_sites, lock.other_waiter_sites);
    sites(out, "holders", &lock.holder_sites, lock.other_holder_sites);
    summary_line(
        out,
        "held across .await",
        "holds",
        &lock.hold_across_await,
        scale,
    );
    summary_line(
        out,
        "waits given up (no lock)",
        "waits",
        &lock.gave_up,
        scale,
    );
    if lock.waiters_at_release > 0 {
        let _ = writeln!(
            out,
            "  waiters left at releases: {}",
            lock.waiters_at_release
        );
    }
    if lock.restarts > 0 {
        let _ = writeln!(
            out,
            "  optimistic restarts: {}, of which fell back to locking: {}",
            lock.restarts, lock.fallbacks
        );
    }
}

/// A line of a row's extra `summary` (none if it is empty): its count and total scaled to
/// estimates, its average, p99 and max as sampled.
fn summary_line(out: &mut String, label: &str, unit: &str, summary: &Summary, scale: u64) {
    if summary.count > 0 {
        let _ = writeln!(
            out,
            "  {label}: {} {unit}, {} in all, avg {}, p99 {}, max {}",
            summary.count.saturating_mul(scale),
            time(scaled(summary.total, scale)),
            time(summary.mean()),
            time(summary.p99),
            time(summary.max),
        );
    }
}

/// The 99th percentile of the sampled waits of the acquisitions that queued (the
/// histogram's buckets without the zero of those that did not), within the histogram's
/// resolution; `None` if none queued.
fn contended_p99(wait: &Summary) -> Option<Duration> {
    let waits = || wait.buckets().filter(|(upper, _)| !upper.is_zero());
    let count: u64 = waits().map(|(_, n)| n).sum();
    let rank = count.checked_mul(99)?.div_ceil(100);
    let mut seen = 0;
    waits()
        .find(|&(_, n)| {
            seen += n;
            seen >= rank && count > 0
        })
        .map(|(upper, _)| upper.min(wait.max))
}

/// Time cells, `-` for each when nothing was recorded (`count` 0).
fn cells(out: &mut String, values: &[Duration], count: u64) {
    for value in values {
        if count == 0 {
            let _ = write!(out, " {:>12}", "-");
        } else {
            let _ = write!(out, " {:>12}", time(*value));
        }
    }
}

/// `  waiters: 12 [3.1ms] src/main.rs:40, 2 [120µs] src/lib.rs:9, 1 [5µs] other sites`.
fn sites(out: &mut String, what: &str, sites: &[SiteStats], other: OtherSites) {
    if sites.is_empty() && other.count == 0 {
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
    if other.count > 0 {
        let separator = if sites.is_empty() { "" } else { "," };
        let _ = write!(
            out,
            "{separator} {} [{}] other sites",
            other.count,
            time(other.total)
        );
    }
    out.push('\n');
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
    use super::super::report::{LockName, LockStats, OtherSites, Report, SiteStats, Summary};
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
            buckets: vec![(p99, count)],
        }
    }

    /// A level whose `contended` sampled waits were all at one site, each counted `scale`
    /// times, as the telemetry records them.
    fn level(level: usize, wait: Summary, acquisitions: u64, scale: u64) -> LockStats {
        LockStats {
            lock: LockName::Level {
                locker: "ClassLocker",
                level,
                name: "Lecture",
            },
            acquisitions: acquisitions * scale,
            contended: wait.count * scale,
            waiter_sites: vec![SiteStats {
                site: Location::caller(),
                count: wait.count * scale,
                total: wait.total * u32::try_from(scale).unwrap(),
            }],
            other_waiter_sites: OtherSites::default(),
            wait,
            gave_up: Summary::default(),
            hold: summary(2, [10, 30, 40, 10, 30]),
            hold_across_await: Summary::default(),
            waiters_at_release: 0,
            holder_sites: Vec::new(),
            other_holder_sites: OtherSites::default(),
            restarts: 0,
            fallbacks: 0,
        }
    }

    #[test]
    fn rows_hottest_first_with_their_sites() {
        let report = Report {
            sample_every: 1,
            locks: vec![
                level(2, summary(1, [5, 5, 5, 5, 5]), 7, 1),
                level(1, summary(3, [100, 1_000, 1_500, 400, 1_000]), 9, 1),
            ],
        };
        let table = report.table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "every acquisition recorded: exact counts and times"
        );
        let headings: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            headings,
            [
                "class",
                "wait-total",
                "contentions",
                "wait-avg",
                "wait-p99",
                "wait-max",
                "acquisitions",
                "hold-total",
                "hold-avg",
                "hold-p99",
                "hold-max"
            ],
            "{table}"
        );
        // Level 1 waited longer in total: first.
        let cells: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            cells[..4],
            ["ClassLocker", "level", "1", "(Lecture)"],
            "{table}"
        );
        assert_eq!(
            cells[4..],
            [
                "1.50ms", "3", "500µs", "1.00ms", "1.00ms", "9", "40.0µs", "20.0µs", "30.0µs",
                "30.0µs"
            ],
            "{table}"
        );
        let site = report.locks[1].waiter_sites[0].site;
        assert_eq!(
            lines[3],
            format!("  waiters: 3 [1.50ms] {}:{}", site.file(), site.line()),
            "{table}"
        );
        assert!(lines[4].starts_with("ClassLocker level 2"), "{table}");
        assert!(report.to_string() == table, "Display is the table");
    }

    /// Sampled 1 in 100: the totals are estimates, in the scale of the counts and of the
    /// waiter line (a raw sum of samples beside scaled counts was the bug); the other sites
    /// complete the line.
    #[test]
    fn sampled_totals_share_the_counts_scale() {
        let mut lock = level(1, summary(3, [100, 1_000, 1_500, 400, 1_000]), 9, 100);
        lock.waiter_sites[0].count = 200;
        lock.waiter_sites[0].total = Duration::from_millis(100);
        lock.other_waiter_sites = OtherSites {
            count: 100,
            total: Duration::from_millis(50),
        };
        let report = Report {
            sample_every: 100,
            locks: vec![lock],
        };
        let table = report.table();
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].starts_with("1 acquisition in 100 sampled: counts and totals are estimates"),
            "{table}"
        );
        let cells: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            cells[4..],
            [
                "150ms", "300", "500µs", "1.00ms", "1.00ms", "900", "4.00ms", "20.0µs", "30.0µs",
                "30.0µs"
            ],
            "{table}"
        );
        let site = report.locks[0].waiter_sites[0].site;
        assert_eq!(
            lines[3],
            format!(
                "  waiters: 200 [100ms] {}:{}, 100 [50.0ms] other sites",
                site.file(),
                site.line()
            ),
            "{table}"
        );
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
