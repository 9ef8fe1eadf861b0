//! The command-line program: what `--help` says, the table it prints, durations it accepts,
//! and its progress output when stderr is not a terminal (as here: a pipe).

use std::process::{Command, Output};

fn scheduler(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chainlock-scheduler"))
        .args(args)
        .output()
        .expect("the program starts")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("UTF-8 output")
}

#[test]
fn help_describes_the_service() {
    let output = scheduler(&["--help"]);
    assert!(output.status.success());
    let help = text(&output.stdout);
    assert!(
        help.starts_with("A scheduling service for online classes under load"),
        "{help}"
    );
    for flag in [
        "--strategy",
        "--leaf",
        "--threads",
        "--lectures",
        "--students",
        "--threshold",
        "--mix",
        "--duration",
        "--ops",
        "--check-every",
        "--seed",
        "--stats",
        "--sample-every",
        "--stats-svg",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn a_run_prints_one_row_per_strategy_and_leaf_work_and_plain_progress_lines() {
    let output = scheduler(&[
        "--strategy",
        "chain,crab,optimistic,coarse",
        "--leaf",
        "none,cpu",
        "--threads",
        "2",
        "--ops",
        "3000",
        "--check-every",
        "1ms",
    ]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");

    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|line| line.starts_with("| none") || line.starts_with("| cpu"))
        .map(|line| line.split('|').map(str::trim).collect())
        .collect();
    let cells: Vec<(&str, &str, &str)> = rows.iter().map(|row| (row[1], row[2], row[9])).collect();
    assert_eq!(
        cells,
        [
            ("none", "chain", "hold"),
            ("none", "crab", "hold"),
            ("none", "optimistic", "hold"),
            ("none", "coarse", "hold"),
            ("cpu", "chain", "hold"),
            ("cpu", "crab", "hold"),
            ("cpu", "optimistic", "hold"),
            ("cpu", "coarse", "hold"),
        ],
        "{stdout}"
    );
    let coarse_ratios: Vec<&str> = rows
        .iter()
        .filter(|row| row[2] == "coarse")
        .map(|row| row[5])
        .collect();
    assert_eq!(coarse_ratios, ["1.00×", "1.00×"], "{stdout}");

    // Not a terminal: no carriage returns, no escape sequences, one line per run.
    assert!(!stderr.contains(['\r', '\x1b']), "{stderr:?}");
    let done: Vec<&str> = stderr
        .lines()
        .filter(|line| line.ends_with("(done)"))
        .collect();
    assert_eq!(done.len(), 8, "{stderr}");
    assert!(
        done.iter()
            .all(|line| line.contains("3000 ops") && line.contains("0 violations")),
        "{stderr}"
    );
}

#[test]
fn durations_take_units() {
    let output = scheduler(&[
        "--strategy",
        "coarse",
        "--leaf",
        "none",
        "--duration",
        "20ms",
        "--check-every",
        "0",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("each run: 20ms"),
        "{}",
        text(&output.stdout)
    );

    for bad in ["2.5", "1 fortnight", ""] {
        let output = scheduler(&["--duration", bad]);
        assert_eq!(output.status.code(), Some(2), "`{bad}` was accepted");
        assert!(
            text(&output.stderr).contains("invalid value"),
            "{}",
            text(&output.stderr)
        );
    }
}

#[test]
fn unknown_names_list_the_known_ones() {
    for (flag, bad, message) in [
        (
            "--strategy",
            "chain,fast",
            "unknown strategy `fast` (expected one of: chain, crab, optimistic, coarse)",
        ),
        (
            "--leaf",
            "disk",
            "unknown leaf work `disk` (expected one of: none, cpu, blocking)",
        ),
    ] {
        let output = scheduler(&[flag, bad]);
        assert_eq!(output.status.code(), Some(2), "{flag} {bad} was accepted");
        assert!(
            text(&output.stderr).contains(message),
            "{}",
            text(&output.stderr)
        );
    }
}

/// A duration as the table prints it: `850ns`, `12.3µs`, `1.50ms`, `2.00s`.
fn duration(text: &str) -> f64 {
    let (number, unit) = text
        .find(|c: char| c.is_alphabetic())
        .map_or_else(|| panic!("a duration: {text}"), |at| text.split_at(at));
    let number: f64 = number
        .parse()
        .unwrap_or_else(|_| panic!("a duration: {text}"));
    number
        * match unit {
            "ns" => 1e-9,
            "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            _ => panic!("a unit: {text}"),
        }
}

/// Whether two totals agree within the rounding of three significant figures per printed
/// figure (each is off by at most 0.5 %).
fn agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.011 * a.max(b) + 1e-9
}

/// One lock class of a `--stats` table: its estimated total wait and contentions, and the
/// same summed over its waiter line.
struct Row {
    name: String,
    wait_total: f64,
    contentions: u64,
    waiters: (u64, f64),
}

/// The rows of one run's table (`section`: from its `### ` heading on).
fn rows(section: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for line in section.lines().skip(3).take_while(|line| !line.is_empty()) {
        if let Some(sites) = line.strip_prefix("  waiters:") {
            let row = rows.last_mut().expect("a waiter line under a row");
            for site in sites.split(", ") {
                let mut words = site.split_whitespace();
                let count: u64 = words.next().and_then(|w| w.parse().ok()).expect("a count");
                let total = words.next().expect("a total");
                row.waiters.0 += count;
                row.waiters.1 += duration(total.trim_matches(['[', ']']));
            }
        } else if !line.starts_with(' ') && !line.is_empty() {
            let cells: Vec<&str> = line.split_whitespace().collect();
            assert!(cells.len() > 10, "a row of ten figures: {line}");
            let figures = &cells[cells.len() - 10..];
            rows.push(Row {
                name: cells[..cells.len() - 10].join(" "),
                wait_total: duration(figures[0]),
                contentions: figures[1].parse().expect("contentions"),
                waiters: (0, 0.0),
            });
        }
    }
    rows
}

/// The rows of one run's table, each checked: one scale in a table, so each row's
/// contentions and total wait are its waiter line's, summed.
fn rows_agreeing_with_their_waiter_lines(section: &str) -> Vec<Row> {
    let rows = rows(section);
    for row in &rows {
        assert_eq!(row.contentions, row.waiters.0, "{}: {section}", row.name);
        assert!(
            agree(row.wait_total, row.waiters.1),
            "{}: wait-total {} s, waiters {} s: {section}",
            row.name,
            row.wait_total,
            row.waiters.1
        );
    }
    rows
}

#[test]
fn stats_prints_the_hottest_locks_and_writes_an_svg_with_a_curve_per_strategy() {
    let id = std::process::id();
    let svg_path = std::env::temp_dir().join(format!("chainlock-scheduler-waits-{id}.svg"));
    let output = scheduler(&[
        "--stats",
        "--stats-svg",
        svg_path.to_str().expect("a UTF-8 temp dir"),
        // Sampled, so that a figure left unscaled shows; every class in the table, so
        // that the tables sum to the SVG's figures.
        "--sample-every",
        "10",
        "--stats-top",
        "100",
        "--leaf",
        "none",
        "--threads",
        "4",
        "--ops",
        "20000",
        "--check-every",
        "0s",
    ]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stdout}\n{stderr}");
    // First, per run, the lock waited for most, how long, and who held it.
    let headlines: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("## the lock each run waited for most"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .collect();
    assert_eq!(headlines.len(), 4, "{stdout}");
    assert!(
        headlines[0].starts_with("none chain: ChainToClass level"),
        "{stdout}"
    );
    let mut tables = Vec::new();
    // One table per run, each headed by its scale and the lock_stat columns, the strategy's
    // own lockers in it (counted acquisitions, so present whatever the contention).
    for (strategy, locker) in [
        ("chain", "ChainToClass level 0 (Registry)"),
        ("crab", "CrabToClass level 0 (Registry)"),
        ("optimistic", "OptimisticToClass level 2 (Class)"),
        ("coarse", "Global level 0 (World)"),
    ] {
        let heading = format!("### leaf work none, strategy {strategy}");
        let section = stdout
            .split("### ")
            .find(|section| heading.ends_with(section.lines().next().unwrap_or("?")))
            .unwrap_or_else(|| panic!("no {heading} in\n{stdout}"));
        assert!(
            section.lines().nth(1).is_some_and(|line| line
                .starts_with("1 acquisition in 10 sampled: counts and totals are estimates")),
            "{section}"
        );
        assert!(
            section
                .lines()
                .nth(2)
                .is_some_and(|line| line.starts_with("class")
                    && line.contains("contentions")
                    && line.contains("acquisitions")),
            "{section}"
        );
        let row = section
            .lines()
            .find(|line| line.starts_with(locker))
            .unwrap_or_else(|| panic!("no {locker} row in\n{section}"));
        let acquisitions: u64 = row
            .trim_start_matches(locker)
            .split_whitespace()
            .nth(5)
            .and_then(|cell| cell.parse().ok())
            .unwrap_or_else(|| panic!("an acquisitions cell in {row}"));
        assert!(acquisitions > 0, "{row}");
        let rows = rows_agreeing_with_their_waiter_lines(section);
        tables.push((strategy, rows));
    }
    assert!(
        tables
            .iter()
            .flat_map(|(_, rows)| rows)
            .any(|row| row.contentions > 0),
        "some run waited: {stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "wait-time distributions per strategy: {}",
            svg_path.display()
        )),
        "{stdout}"
    );
    // The SVG: well-formed XML, an `svg` root, one curve per strategy.
    let svg = std::fs::read_to_string(&svg_path).expect("the SVG was written");
    let document = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let mut curves: Vec<&str> = root
        .descendants()
        .filter(|node| node.has_tag_name("path"))
        .filter_map(|path| path.attribute("data-strategy"))
        .collect();
    curves.sort_unstable();
    assert_eq!(curves, ["chain", "coarse", "crab", "optimistic"], "{svg}");
    legend_agrees_with_the_tables_and_sits_beside_the_plot(root, &tables);
    std::fs::remove_file(&svg_path).ok();
}

/// The SVG's legend gives each run's contentions and total wait as its table's rows sum
/// them (every class shown), and it sits beside the plot, not over the curves.
fn legend_agrees_with_the_tables_and_sits_beside_the_plot(
    root: roxmltree::Node<'_, '_>,
    tables: &[(&str, Vec<Row>)],
) {
    let svg = root.document().input_text();
    for (strategy, rows) in tables {
        let strategy = *strategy;
        let legend = root
            .descendants()
            .find(|node| {
                node.has_tag_name("text") && node.attribute("data-strategy") == Some(strategy)
            })
            .unwrap_or_else(|| panic!("a legend line for {strategy}: {svg}"));
        let contentions: u64 = legend
            .attribute("data-contentions")
            .and_then(|n| n.parse().ok())
            .expect("data-contentions");
        let waited = legend
            .attribute("data-wait-nanos")
            .and_then(|n| n.parse::<f64>().ok())
            .expect("data-wait-nanos")
            * 1e-9;
        assert_eq!(
            contentions,
            rows.iter().map(|row| row.contentions).sum::<u64>(),
            "{strategy}: {svg}"
        );
        let table_total: f64 = rows.iter().map(|row| row.wait_total).sum();
        assert!(
            agree(waited, table_total),
            "{strategy}: legend {waited} s, tables {table_total} s"
        );
    }
    // The legend is beside the plot, not over it: right of the plot's right edge.
    let plot_right = root
        .descendants()
        .filter(|node| node.has_tag_name("path") && node.attribute("data-strategy").is_none())
        .filter_map(|axis| axis.attribute("d"))
        .filter_map(|d| d.rsplit('H').next()?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    for legend in root
        .descendants()
        .filter(|node| node.attribute("data-contentions").is_some())
    {
        let x: f64 = legend
            .attribute("x")
            .and_then(|x| x.parse().ok())
            .expect("x");
        assert!(x > plot_right, "legend at {x}, plot up to {plot_right}");
    }
}
