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
