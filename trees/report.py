#!/usr/bin/env python3
"""Writes the trees benchmark's README table and plot from criterion's output.

Run from the workspace root after `cargo bench -p chainlock-trees --bench trees`:

    python3 trees/report.py                            # prints the markdown table
    python3 trees/report.py --svg docs/trees-speedup.svg

Reads target/criterion/<group>/<side>/<threads>/new/estimates.json for the groups below;
the ratio is global's median time / the fine-grained side's (above 1: the fine-grained side
is faster): `walk` for the file system, `ordered_map` for the B+-tree. A second table gives
the B+-tree groups' medians per peer (`ordered_map`, `global`, `skip_map`, `tree_index`,
and `btreemap_unsynchronized` at 1 thread) in million operations per second. No dependencies.
"""
import argparse
import json
import pathlib

GROUPS = [
    ("filesystem", "file system, 50 µs I/O at the target (70% write, 20% read, 10% stat), vs one `RwLock`"),
    ("ordered_map_read_mostly", "B+-tree (optimistic), read-mostly (90% get), vs `RwLock<BTreeMap>`"),
    ("ordered_map_write_heavy", "B+-tree (optimistic), write-heavy (50% insert), vs `RwLock<BTreeMap>`"),
]
# The fine-grained side of each group.
SIDE = {"filesystem": "walk", "ordered_map_read_mostly": "ordered_map", "ordered_map_write_heavy": "ordered_map"}
PEERS = ["ordered_map", "global", "skip_map", "tree_index"]
# Operations per iteration of the B+-tree groups (the benchmark's `ops`).
OPS = 200_000
THREADS = [1, 2, 4, 16, 64]
COLORS = ["#1f77b4", "#2ca02c", "#d62728"]


def median_ns(root, group, side, threads):
    path = root / group / side / str(threads) / "new" / "estimates.json"
    return json.loads(path.read_text())["median"]["point_estimate"]


def load(root):
    """The ratios of the groups that were run (a filtered run may leave some out)."""
    return {
        group: [median_ns(root, group, "global", t) / median_ns(root, group, SIDE[group], t) for t in THREADS]
        for group, _ in GROUPS
        if (root / group).exists()
    }


def table(ratios):
    lines = ["| threads | " + " | ".join(str(t) for t in THREADS) + " |", "|---" * (len(THREADS) + 1) + "|"]
    for group, label in [(g, l) for g, l in GROUPS if g in ratios]:
        cells = [f"{r:.2f}×" for r in ratios[group]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def peers_table(root):
    """Million operations per second (median) of every peer of the B+-tree groups."""
    lines = ["| mix | peer | " + " | ".join(f"{t} thr" for t in THREADS) + " |", "|---|---" + "|---" * len(THREADS) + "|"]
    for group, _ in GROUPS[1:]:
        mix = group.removeprefix("ordered_map_")
        for peer in PEERS:
            cells = [f"{OPS / median_ns(root, group, peer, t) * 1e3:.1f}" for t in THREADS]
            lines.append(f"| {mix} | `{peer}` | " + " | ".join(cells) + " |")
        unsync = OPS / median_ns(root, group, "btreemap_unsynchronized", 1) * 1e3
        lines.append(f"| {mix} | `BTreeMap` unsynchronized | {unsync:.1f} |" + " |" * (len(THREADS) - 1))
    return "\n".join(lines)


def svg(ratios):
    width, height, left, bottom, top, right = 640, 360, 60, 50, 20, 20
    import math
    top_ratio = max(max(r) for r in ratios.values())
    y_max = 2 ** math.ceil(math.log2(max(top_ratio, 2)))
    y_min = 0.25

    def x(i):
        return left + i * (width - left - right) / (len(THREADS) - 1)

    def y(r):
        span = math.log2(y_max) - math.log2(y_min)
        return top + (math.log2(y_max) - math.log2(max(r, y_min))) * (height - top - bottom) / span

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    tick = y_min
    while tick <= y_max:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="{"#888" if tick == 1 else "#ddd"}"/>')
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}×</text>')
        tick *= 2
    for i, t in enumerate(THREADS):
        out.append(f'<text x="{x(i):.1f}" y="{height - bottom + 18}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle">client threads</text>')
    out.append(f'<text x="14" y="{(top + height - bottom) / 2}" text-anchor="middle" transform="rotate(-90 14 {(top + height - bottom) / 2})">global lock time ÷ walk time</text>')
    for (group, _), color in zip(GROUPS, COLORS):
        if group not in ratios:
            continue
        points = " ".join(f"{x(i):.1f},{y(r):.1f}" for i, r in enumerate(ratios[group]))
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"/>')
    for n, ((group, _), color) in enumerate(zip(GROUPS, COLORS)):
        out.append(f'<rect x="{left + 10}" y="{top + 8 + n * 16}" width="12" height="3" fill="{color}"/>')
        out.append(f'<text x="{left + 28}" y="{top + 13 + n * 16}">{group}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--criterion", default="target/criterion", type=pathlib.Path)
    parser.add_argument("--svg", type=pathlib.Path)
    args = parser.parse_args()
    ratios = load(args.criterion)
    print(table(ratios))
    print()
    print(peers_table(args.criterion))
    if args.svg:
        args.svg.write_text(svg(ratios))


if __name__ == "__main__":
    main()
