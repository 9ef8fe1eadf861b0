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
        "chain,crab,coarse",
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
            ("none", "coarse", "hold"),
            ("cpu", "chain", "hold"),
            ("cpu", "crab", "hold"),
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
    assert_eq!(done.len(), 6, "{stderr}");
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
            "unknown strategy `fast` (expected one of: chain, crab, coarse)",
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

#[test]
fn stats_prints_the_hottest_locks_and_writes_an_svg_with_a_curve_per_strategy() {
    let svg_path = std::env::temp_dir().join(format!(
        "chainlock-scheduler-waits-{}.svg",
        std::process::id()
    ));
    let output = scheduler(&[
        "--stats",
        "--stats-svg",
        svg_path.to_str().expect("a UTF-8 temp dir"),
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
    // One table per run, each headed by the lock_stat columns, the strategy's own lockers
    // in it (counted acquisitions, so present whatever the contention).
    for (strategy, locker) in [
        ("chain", "ChainToClass level 0 (Registry)"),
        ("crab", "CrabToClass level 0 (Registry)"),
        ("coarse", "Global level 0 (World)"),
    ] {
        let heading = format!("### leaf work none, strategy {strategy}");
        let section = stdout
            .split("### ")
            .find(|section| heading.ends_with(section.lines().next().unwrap_or("?")))
            .unwrap_or_else(|| panic!("no {heading} in\n{stdout}"));
        assert!(
            section
                .lines()
                .nth(1)
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
            .nth(7)
            .and_then(|cell| cell.parse().ok())
            .unwrap_or_else(|| panic!("an acquisitions cell in {row}"));
        assert!(acquisitions > 0, "{row}");
    }
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
    assert_eq!(curves, ["chain", "coarse", "crab"], "{svg}");
    std::fs::remove_file(&svg_path).ok();
}
