#!/usr/bin/env python3
"""Writes the medians and ratios of docs/benchmarks.md from criterion's output.

Run from the workspace root after the benchmarks (`cargo bench --bench <name>`,
`cargo bench -p chainlock-scheduler --bench scheduler`, `cargo bench -p chainlock-trees
--bench trees`):

    python3 scripts/bench_report.py                          # prints every table it can fill
    python3 scripts/bench_report.py --update docs/benchmarks.md

Reads every target/criterion/**/new/{benchmark,estimates}.json (criterion's `full_id` names
a benchmark, its median is `median.point_estimate`). A table of the page is generated when
it sits between `<!-- bench_report: NAME -->` and `<!-- /bench_report -->`:

- `scheduler` and `trees` are written whole by `scheduler/report.py` and `trees/report.py`
  (their tables, reused here, not duplicated);
- every other NAME is a table of `CELLS` below: the script rewrites the first time in a
  median cell and the first ratio (`1.23×`) in a ratio cell, and keeps every other word of
  the cell (instruction counts from callgrind, bold, comments) as written.

A benchmark with no result under target/criterion leaves its cell as it was, so a partial
run updates only what it measured. No dependencies.
"""
import argparse
import importlib.util
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# NAME -> [(data row, column, what)]; rows and columns count from 0 (column 0 is the
# row label); `what` is a criterion full_id (its median) or ("ratio", a, b): median(a) /
# median(b).
ZC = "chain_zero_cost/{}/{}"
NL = "uncontended/{}"
TP = "throughput_4_threads/{}/{}_keys"
RO = "rooms_uncontended/{}"
RT = "rooms_throughput_8_threads/{}/{}"
CELLS = {
    "zero_cost": [
        cell
        for row, depth in enumerate([3, 8])
        for cell in [
            (row, 1, ZC.format("generated", depth)),
            (row, 2, ZC.format("hand_written", depth)),
            (row, 3, ("ratio", ZC.format("generated", depth), ZC.format("hand_written", depth))),
        ]
    ],
    "named_uncontended": [
        cell
        for row, peer in enumerate(["parking_lot_mutex", "striped", "keyed_locks", "naive_manager", "lockable"])
        for cell in [(row, 1, NL.format(peer)), (row, 2, ("ratio", NL.format(peer), NL.format("parking_lot_mutex")))]
    ],
    "named_throughput": [
        (row, col, TP.format(peer, keys))
        for row, keys in enumerate([1, 16, 100000])
        for col, peer in enumerate(["global_mutex", "striped", "keyed_locks", "naive_manager", "lockable"], start=1)
    ],
    "rooms": [
        (0, 1, RO.format("chainlock_rooms_enter_leave")),
        (0, 2, RO.format("mutex_condvar_notify_all_enter_leave")),
        (0, 3, ("ratio", RO.format("mutex_condvar_notify_all_enter_leave"), RO.format("chainlock_rooms_enter_leave"))),
        (1, 3, ("ratio", RO.format("chainlock_rooms_enter_leave"), RO.format("parking_lot_mutex_lock_unlock"))),
        (2, 1, RO.format("chainlock_rooms_enter_leave_occupied_room")),
        (2, 3, ("ratio", RO.format("chainlock_rooms_enter_leave_occupied_room"), RO.format("parking_lot_mutex_lock_unlock"))),
    ]
    + [
        cell
        for row, rooms in [(3, 2), (4, 8)]
        for cell in [
            (row, 1, RT.format("chainlock_rooms", rooms)),
            (row, 2, RT.format("mutex_condvar_notify_all", rooms)),
            (row, 3, ("ratio", RT.format("mutex_condvar_notify_all", rooms), RT.format("chainlock_rooms", rooms))),
        ]
    ],
}
# The reader-writer and permit tables: a median per row, and one ratio per row against
# the row it is compared with.
READ = "uncontended_read/{}"
PERMIT = "uncontended_permit/{}"
CELLS["named_read"] = [
    (0, 1, READ.format("parking_lot_rwlock")),
    (1, 1, READ.format("keyed_rw_locks")),
    (1, 2, ("ratio", READ.format("keyed_rw_locks"), READ.format("parking_lot_rwlock"))),
    (2, 1, READ.format("naive_rw_manager")),
    (2, 2, ("ratio", READ.format("naive_rw_manager"), READ.format("keyed_rw_locks"))),
]
CELLS["named_permit"] = [
    (0, 1, PERMIT.format("tokio_semaphore")),
    (1, 1, PERMIT.format("keyed_permits")),
    (1, 2, ("ratio", PERMIT.format("keyed_permits"), PERMIT.format("tokio_semaphore"))),
    (2, 1, PERMIT.format("async_keyed_permits")),
    (2, 2, ("ratio", PERMIT.format("tokio_semaphore_map"), PERMIT.format("async_keyed_permits"))),
    (3, 1, PERMIT.format("tokio_semaphore_map")),
]

TIME = re.compile(r"\d[\d,]*(?:\.\d+)?\s?(?:ns|µs|ms|s)\b")
RATIO = re.compile(r"\d+(?:\.\d+)?×")
BLOCK = re.compile(r"(<!-- bench_report: (\w+) -->\n)(.*?)(<!-- /bench_report -->)", re.S)


def load(criterion):
    """criterion full_id -> median time in ns, for every benchmark with a `new` result."""
    medians = {}
    for estimates in criterion.glob("**/new/estimates.json"):
        bench = json.loads((estimates.parent / "benchmark.json").read_text())
        medians[bench["full_id"]] = json.loads(estimates.read_text())["median"]["point_estimate"]
    return medians


def human_time(ns):
    for unit, scale in (("ns", 1), ("µs", 1e3), ("ms", 1e6)):
        if ns < 1000 * scale:
            return f"{ns / scale:.1f} {unit}"
    return f"{ns / 1e9:.2f} s"


def value(medians, what):
    """The text of a cell's figure, or None when the run did not measure it."""
    if isinstance(what, tuple):
        _, a, b = what
        if a in medians and b in medians:
            return f"{medians[a] / medians[b]:.2f}×"
        return None
    return human_time(medians[what]) if what in medians else None


def fill(table, cells, medians):
    """The table with its cells' figures replaced; other words of a cell are kept."""
    lines = table.rstrip("\n").split("\n")
    header, rows = lines[:2], [line.split("|") for line in lines[2:]]
    for row, col, what in cells:
        text = value(medians, what)
        if text is None or row >= len(rows):
            continue
        parts = rows[row]
        cell = parts[col + 1]  # parts[0] is the text before the first `|`
        pattern = RATIO if isinstance(what, tuple) else TIME
        if pattern.search(cell):
            parts[col + 1] = pattern.sub(text, cell, count=1)
        else:
            parts[col + 1] = f" {text} "
    return "\n".join(header + ["|".join(parts) for parts in rows]) + "\n"


def module(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def generated(name, old, medians, criterion):
    """The new text of block NAME, or None to keep the old one."""
    if name in ("scheduler", "trees"):
        report = module(ROOT / name / "report.py")
        try:
            data = report.load(criterion)
        except (FileNotFoundError, KeyError):
            return None
        return report.table(data) + "\n" if data else None
    if name not in CELLS:
        raise SystemExit(f"unknown table `{name}` (known: scheduler, trees, {', '.join(CELLS)})")
    return fill(old, CELLS[name], medians)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--criterion", default=ROOT / "target" / "criterion", type=pathlib.Path)
    parser.add_argument("--page", default=ROOT / "docs" / "benchmarks.md", type=pathlib.Path)
    parser.add_argument("--update", action="store_true", help="rewrite the page in place")
    args = parser.parse_args()
    medians = load(args.criterion)
    page = args.page.read_text()
    changed = []

    def replace(match):
        opening, name, old, closing = match.groups()
        new = generated(name, old, medians, args.criterion)
        if new is None or new == old:
            return match.group(0)
        changed.append(name)
        if not args.update:
            print(f"{name}:\n{new}")
        return opening + new + closing

    updated = BLOCK.sub(replace, page)
    if args.update:
        args.page.write_text(updated)
    print(f"{len(medians)} criterion results; tables changed: {', '.join(changed) or 'none'}", file=sys.stderr)


if __name__ == "__main__":
    main()
