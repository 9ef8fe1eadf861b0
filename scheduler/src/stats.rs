//! What `--stats` shows: first, one line per run that answers "which lock, how long, who
//! holds it" ([`headline`]); then chainlock's contention telemetry of each run (the hottest
//! lock classes as a `lock_stat`-style table); and an SVG of the wait-time distributions,
//! one curve per strategy, one panel per kind of leaf work. Every figure is in one scale:
//! estimates of all acquisitions (each sampled acquisition counted `--sample-every` times),
//! the same in the headlines, the tables, their waiter lines and the SVG's legend.
//!
//! The levels are named by the locker and the level: `ChainToClass level 1 (Lecture)` is
//! the lecture level of the chain strategy's descent to a class, `CrabToClass level 0
//! (Registry)` the registry read-locked by the crab strategy, `Global level 0 (World)` the
//! coarse strategy's one lock. (The service has no keyed locks: its per-student seat locks
//! are plain mutexes, never contended across students.)
//!
//! # Examples
//!
//! ```
//! use chainlock_scheduler::load::{LoadConfig, Session, Stop};
//! use chainlock_scheduler::stats::{self, RunStats};
//! use chainlock_scheduler::{LeafWork, ServiceConfig, Strategy};
//!
//! let config = ServiceConfig::new(1_000, 8, LeafWork::None)?;
//! let load = LoadConfig { threads: 2, stop: Stop::Ops(2_000), ..LoadConfig::default() };
//! let mut runs = Vec::new();
//! for strategy in [Strategy::Chain, Strategy::Coarse] {
//!     stats::start(1);
//!     Session::new(strategy.build(config), 4).run(&load, &mut |_| {});
//!     runs.push(RunStats { leaf: LeafWork::None, strategy, report: stats::finish() });
//! }
//! println!("{}", stats::headline(&runs[0]));
//! println!("{}", stats::hottest(&runs[0].report, 5));
//! let svg = stats::svg(&runs);
//! assert!(svg.starts_with("<svg"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::{LeafWork, Strategy};
use chainlock::telemetry::{self, Config, Report};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// The telemetry of one run: its leaf work, its strategy, and what chainlock recorded.
#[derive(Clone, Debug)]
pub struct RunStats {
    /// The run's leaf work.
    pub leaf: LeafWork,
    /// The run's strategy.
    pub strategy: Strategy,
    /// chainlock's statistics of the run.
    pub report: Report,
}

/// Starts recording a run: the statistics zeroed, one acquisition in `sample_every`
/// recorded (each counting for `sample_every`).
///
/// # Panics
///
/// If `sample_every` is 0.
///
/// # Examples
///
/// ```
/// chainlock_scheduler::stats::start(100);
/// let report = chainlock_scheduler::stats::finish();
/// assert!(report.locks.is_empty());
/// ```
pub fn start(sample_every: u32) {
    telemetry::enable(Config::new().sample_every(sample_every));
    telemetry::reset();
}

/// Stops recording and returns the run's statistics.
///
/// # Examples
///
/// See [`start`].
#[must_use]
pub fn finish() -> Report {
    telemetry::disable();
    telemetry::report()
}

/// The `n` lock classes with the most total wait, as [`Report::table`] prints them: a line
/// that says the scale, the headings, a row per class with its waiter and holder sites.
///
/// # Examples
///
/// ```
/// let report = chainlock::telemetry::report();
/// let table = chainlock_scheduler::stats::hottest(&report, 5);
/// assert!(table.lines().nth(1).is_some_and(|headings| headings.starts_with("class")));
/// ```
#[must_use]
pub fn hottest(report: &Report, n: usize) -> String {
    let mut hottest = report.clone();
    hottest.locks = report.hottest(n).cloned().collect();
    hottest.table()
}

/// One line of a run's telemetry, what a reader asks first: which lock had the most wait,
/// how long (the estimated total, the contentions, the mean), and who held it (the holder
/// site charged the most delay).
///
/// # Examples
///
/// ```
/// use chainlock_scheduler::stats::{self, RunStats};
/// use chainlock_scheduler::{LeafWork, Strategy};
///
/// let report = chainlock::telemetry::report();
/// let run = RunStats { leaf: LeafWork::None, strategy: Strategy::Chain, report };
/// assert!(stats::headline(&run).starts_with("none chain:"));
/// ```
#[must_use]
pub fn headline(run: &RunStats) -> String {
    let scale = u32::max(run.report.sample_every, 1);
    let Some(lock) = run.report.hottest(1).next() else {
        return format!("{} {}: no lock recorded", run.leaf, run.strategy);
    };
    let waited = lock.wait.total.saturating_mul(scale);
    let mut line = format!(
        "{} {}: {} waited {} in all, {} contentions",
        run.leaf,
        run.strategy,
        lock.lock,
        time(waited),
        lock.contended
    );
    if let Ok(contended @ 1..) = u32::try_from(lock.contended) {
        let _ = write!(line, " ({} each)", time(waited / contended));
    }
    match lock.holder_sites.first() {
        Some(holder) => {
            let _ = write!(
                line,
                "; held by {}:{} ({} of waits charged)",
                holder.site.file(),
                holder.site.line(),
                time(holder.total)
            );
        }
        None => line.push_str("; no release ended a wait"),
    }
    line
}

/// A duration in three significant figures, as the telemetry's table prints it (`850ns`,
/// `12.3µs`, `1.50ms`, `2.00s`), so that a headline and the row under it read alike.
fn time(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    let (value, unit) = match nanos {
        0..1_000 => return format!("{nanos}ns"),
        1_000..1_000_000 => (duration.as_secs_f64() * 1e6, "µs"),
        1_000_000..1_000_000_000 => (duration.as_secs_f64() * 1e3, "ms"),
        _ => (duration.as_secs_f64(), "s"),
    };
    let decimals = match value {
        v if v < 10.0 => 2,
        v if v < 100.0 => 1,
        _ => 0,
    };
    format!("{value:.decimals$}{unit}")
}

/// Width and height of one panel, the width of the legend beside its plot, and the margins
/// around the plot area.
const PANEL: (f64, f64) = (860.0, 300.0);
const LEGEND_WIDTH: f64 = 230.0;
const MARGIN: (f64, f64, f64, f64) = (70.0, 20.0, 40.0, 50.0); // left, right, top, bottom
/// One colour per strategy (chain, crab, optimistic, coarse), as in
/// `docs/scheduler-throughput.svg`.
const COLOURS: [(&str, &str); 4] = [
    ("chain", "#1f77b4"),
    ("crab", "#2ca02c"),
    ("optimistic", "#9467bd"),
    ("coarse", "#d62728"),
];

/// An SVG of the wait-time distributions: one panel per leaf work, in it one curve per
/// strategy (a `<path>` with `data-strategy`), the share of the sampled contended
/// acquisitions that waited at most each duration (log scale, from the telemetry's
/// histogram buckets), and in a legend beside the plot (never over it) each strategy's
/// contentions and total wait, the estimates the tables print (on each legend line as
/// `data-contentions` and `data-wait-nanos` too). Hand-written SVG 1.1, no dependency.
///
/// # Examples
///
/// ```
/// use chainlock_scheduler::stats::{self, RunStats};
/// use chainlock_scheduler::{LeafWork, Strategy};
///
/// let report = chainlock::telemetry::report();
/// let run = RunStats { leaf: LeafWork::None, strategy: Strategy::Coarse, report };
/// let svg = stats::svg(&[run]);
/// assert!(svg.contains(r#"data-strategy="coarse""#));
/// ```
#[must_use]
#[expect(
    clippy::cast_precision_loss,
    reason = "plot coordinates: panel counts far below 2^52"
)]
pub fn svg(runs: &[RunStats]) -> String {
    let mut leaves: Vec<LeafWork> = runs.iter().map(|run| run.leaf).collect();
    leaves.sort();
    leaves.dedup();
    let distributions: Vec<(LeafWork, Strategy, Distribution)> = runs
        .iter()
        .map(|run| (run.leaf, run.strategy, Distribution::of(&run.report)))
        .collect();
    // One x axis for every panel: from the shortest bucket to the longest, in decades.
    let bounds = distributions
        .iter()
        .flat_map(|(_, _, distribution)| distribution.buckets.keys().copied())
        .fold(None, |range: Option<(u128, u128)>, nanos| {
            Some(range.map_or((nanos, nanos), |(low, high)| {
                (low.min(nanos), high.max(nanos))
            }))
        })
        .unwrap_or((1_000, 1_000_000));
    let low = decade_below(bounds.0);
    let high = decade_above(bounds.1).max(low * 10);
    let height = PANEL.1 * leaves.len().max(1) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{height}" viewBox="0 0 {w} {height}" font-family="sans-serif" font-size="12">"#,
        w = PANEL.0
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><title>chainlock-scheduler --stats: wait-time distributions per strategy</title>"#
    );
    for (index, leaf) in leaves.iter().enumerate() {
        let top = PANEL.1 * index as f64;
        let panel: Vec<(Strategy, &Distribution)> = distributions
            .iter()
            .filter(|(run_leaf, _, _)| run_leaf == leaf)
            .map(|(_, strategy, distribution)| (*strategy, distribution))
            .collect();
        write_panel(&mut out, top, *leaf, &panel, (low, high));
    }
    out.push_str("</svg>\n");
    out
}

/// The contended waits of every lock class of a run, merged: the sampled waits'
/// histogram buckets (upper bound in nanoseconds → count; an acquisition that did not
/// queue waited 0 and is left out), and the estimated contentions and total wait (as the
/// table's rows, summed).
struct Distribution {
    buckets: BTreeMap<u128, u64>,
    contentions: u64,
    total: Duration,
}

impl Distribution {
    fn of(report: &Report) -> Self {
        let scale = u32::max(report.sample_every, 1);
        let mut buckets = BTreeMap::new();
        let (mut contentions, mut total) = (0, Duration::ZERO);
        for lock in &report.locks {
            for (upper, waits) in lock.wait.buckets() {
                if !upper.is_zero() {
                    *buckets.entry(upper.as_nanos()).or_insert(0) += waits;
                }
            }
            contentions += lock.contended;
            total += lock.wait.total.saturating_mul(scale);
        }
        Distribution {
            buckets,
            contentions,
            total,
        }
    }
}

fn decade_below(nanos: u128) -> u128 {
    let mut decade = 1;
    while decade * 10 <= nanos {
        decade *= 10;
    }
    decade
}

fn decade_above(nanos: u128) -> u128 {
    let mut decade = 1;
    while decade < nanos {
        decade *= 10;
    }
    decade
}

/// `1µs`, `10ms`: a decade's label.
fn decade_label(nanos: u128) -> String {
    match nanos {
        n if n >= 1_000_000_000 => format!("{}s", n / 1_000_000_000),
        n if n >= 1_000_000 => format!("{}ms", n / 1_000_000),
        n if n >= 1_000 => format!("{}µs", n / 1_000),
        n => format!("{n}ns"),
    }
}

fn colour(strategy: Strategy) -> &'static str {
    COLOURS
        .iter()
        .find(|(name, _)| *name == strategy.name())
        .map_or("black", |(_, colour)| colour)
}

/// One panel: axes, decade ticks, one cumulative curve per strategy, the legend to the
/// right of the plot.
#[expect(
    clippy::cast_precision_loss,
    reason = "plot coordinates: durations and counts as shares and logarithms"
)]
fn write_panel(
    out: &mut String,
    top: f64,
    leaf: LeafWork,
    runs: &[(Strategy, &Distribution)],
    (low, high): (u128, u128),
) {
    let (left, right, margin_top, bottom) = MARGIN;
    let (x0, x1) = (left, PANEL.0 - LEGEND_WIDTH - right);
    let (y0, y1) = (top + PANEL.1 - bottom, top + margin_top);
    let x_of = |nanos: u128| {
        let span = (high as f64).log10() - (low as f64).log10();
        x0 + (x1 - x0) * (((nanos.max(low)) as f64).log10() - (low as f64).log10()) / span
    };
    let y_of = |share: f64| y0 + (y1 - y0) * share;
    let _ = writeln!(
        out,
        r#"<text x="{x0}" y="{}" font-weight="bold">leaf work: {leaf} — share of contended acquisitions that waited at most a duration</text>"#,
        top + 16.0
    );
    let _ = writeln!(
        out,
        r#"<path d="M{x0} {y1} V{y0} H{x1}" fill="none" stroke="black"/>"#
    );
    let mut decade = low;
    while decade <= high {
        let x = x_of(decade);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            y0 + 16.0,
            decade_label(decade)
        );
        decade *= 10;
    }
    for share in [0.0, 0.5, 1.0] {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.1}" text-anchor="end">{:.0}%</text>"#,
            x0 - 6.0,
            y_of(share) + 4.0,
            share * 100.0
        );
    }
    for (index, (strategy, distribution)) in runs.iter().enumerate() {
        let mut d = String::new();
        let mut seen = 0;
        let recorded = distribution.buckets.values().sum::<u64>().max(1) as f64;
        // From 0 % at the first bucket (not from the axis' origin: nothing waited less).
        let first = distribution
            .buckets
            .keys()
            .next()
            .map_or(low, |&upper| upper);
        let _ = write!(d, "M{:.1} {y0:.1}", x_of(first));
        for (&upper, &waits) in &distribution.buckets {
            seen += waits;
            let share = seen as f64 / recorded;
            let _ = write!(d, " L{:.1} {:.1}", x_of(upper), y_of(share));
        }
        let _ = writeln!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="2" data-strategy="{strategy}" data-leaf="{leaf}"/>"#,
            colour(*strategy)
        );
        let legend_y = y1 + 14.0 + 34.0 * index as f64;
        let legend_x = x1 + right;
        let _ = writeln!(
            out,
            r#"<line x1="{legend_x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{legend_y:.1}" fill="{colour}" data-strategy="{strategy}" data-contentions="{contentions}" data-wait-nanos="{nanos}">{strategy}: {total} waited</text><text x="{:.1}" y="{:.1}" fill="{colour}">in {contentions} contentions</text>"#,
            legend_y - 4.0,
            legend_x + 16.0,
            legend_y - 4.0,
            legend_x + 22.0,
            legend_x + 22.0,
            legend_y + 15.0,
            colour = colour(*strategy),
            contentions = distribution.contentions,
            nanos = distribution.total.as_nanos(),
            total = time(distribution.total),
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" fill="gray">every lock class of the run;</text><text x="{:.1}" y="{:.1}" fill="gray">estimates: each sample counted</text><text x="{:.1}" y="{:.1}" fill="gray">--sample-every times</text>"#,
        x1 + right,
        y0 - 34.0,
        x1 + right,
        y0 - 18.0,
        x1 + right,
        y0 - 2.0
    );
}

#[cfg(test)]
mod tests {
    use super::{decade_above, decade_below, decade_label, time};

    #[test]
    fn decades() {
        assert_eq!((decade_below(4_500), decade_above(4_500)), (1_000, 10_000));
        assert_eq!((decade_below(1_000), decade_above(1_000)), (1_000, 1_000));
        assert_eq!(decade_label(10_000), "10µs");
        assert_eq!(decade_label(100_000_000), "100ms");
    }

    #[test]
    fn times_read_as_the_table_prints_them() {
        use std::time::Duration;
        assert_eq!(time(Duration::from_nanos(850)), "850ns");
        assert_eq!(time(Duration::from_nanos(12_345)), "12.3µs");
        assert_eq!(time(Duration::from_micros(1_500)), "1.50ms");
        assert_eq!(time(Duration::from_millis(102_710)), "103s");
    }
}
