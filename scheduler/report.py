#!/usr/bin/env python3
"""Writes the scheduler benchmark's README table and plot from criterion's output.

Run from the workspace root after `cargo bench -p chainlock-scheduler --bench scheduler`:

    python3 scheduler/report.py            # prints the markdown table
    python3 scheduler/report.py --svg docs/scheduler-throughput.svg

Reads target/criterion/scheduler_<leaf>/<strategy>/<threads>/new/{benchmark,estimates}.json:
throughput = elements per iteration / median time per iteration. No dependencies.
"""
import argparse
import json
import pathlib

LEAVES = ["none", "cpu", "blocking"]
STRATEGIES = ["chain", "crab", "optimistic", "coarse"]
COLORS = {"chain": "#1f77b4", "crab": "#2ca02c", "optimistic": "#9467bd", "coarse": "#d62728"}


def load(root):
    data = {}
    for leaf in LEAVES:
        for strategy in STRATEGIES:
            base = root / f"scheduler_{leaf}" / strategy
            if not base.is_dir():
                continue
            for run in base.iterdir():
                new = run / "new"
                if not (new / "estimates.json").exists():
                    continue
                bench = json.loads((new / "benchmark.json").read_text())
                estimates = json.loads((new / "estimates.json").read_text())
                ops = bench["throughput"]["Elements"]
                median_ns = estimates["median"]["point_estimate"]
                data[(leaf, strategy, int(run.name))] = ops / (median_ns * 1e-9)
    return data


def human(ops):
    if ops >= 1e6:
        return f"{ops / 1e6:.2f} M"
    return f"{ops / 1e3:.0f} k"


def table(data):
    threads = sorted({t for (_, _, t) in data})
    lines = [
        "| leaf work | strategy | " + " | ".join(f"{t} thr" for t in threads) + " |",
        "|---|---|" + "---:|" * len(threads),
    ]
    for leaf in LEAVES:
        for strategy in STRATEGIES:
            cells = []
            for t in threads:
                ops = data.get((leaf, strategy, t))
                coarse = data.get((leaf, "coarse", t))
                if ops is None:
                    cells.append("")
                elif strategy == "coarse" or coarse is None:
                    cells.append(human(ops))
                else:
                    cells.append(f"{human(ops)} ({ops / coarse:.2f}×)")
            lines.append(f"| {leaf} | {strategy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def svg(data):
    """Three panels (one per leaf work), ops/s against threads, log-log axes."""
    import math

    threads = sorted({t for (_, _, t) in data})
    width, height, pad = 300, 260, 55
    total_w = width * len(LEAVES) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{height + 40}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{total_w}" height="{height + 40}" fill="white"/>',
    ]
    for panel, leaf in enumerate(LEAVES):
        x0 = panel * width + 10
        values = [v for (l, _, _), v in data.items() if l == leaf]
        if not values:
            continue
        lo = 10 ** math.floor(math.log10(min(values)))
        hi = 10 ** math.ceil(math.log10(max(values)))
        plot_w, plot_h = width - pad - 15, height - 2 * pad + 20

        def px(t):
            i = threads.index(t)
            return x0 + pad + plot_w * i / max(1, len(threads) - 1)

        def py(v):
            return 30 + plot_h * (1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))

        parts.append(f'<text x="{x0 + pad + plot_w / 2}" y="18" text-anchor="middle" '
                     f'font-weight="bold">leaf work: {leaf}</text>')
        parts.append(f'<rect x="{x0 + pad}" y="30" width="{plot_w}" height="{plot_h}" '
                     'fill="none" stroke="#999"/>')
        decade = lo
        while decade <= hi:
            y = py(decade)
            parts.append(f'<line x1="{x0 + pad}" x2="{x0 + pad + plot_w}" y1="{y}" y2="{y}" stroke="#eee"/>')
            parts.append(f'<text x="{x0 + pad - 4}" y="{y + 4}" text-anchor="end">{human(decade)}</text>')
            decade *= 10
        for t in threads:
            parts.append(f'<text x="{px(t)}" y="{30 + plot_h + 14}" text-anchor="middle">{t}</text>')
        parts.append(f'<text x="{x0 + pad + plot_w / 2}" y="{30 + plot_h + 30}" '
                     'text-anchor="middle">client threads</text>')
        parts.append(f'<text x="{x0 + 12}" y="{30 + plot_h / 2}" text-anchor="middle" '
                     f'transform="rotate(-90 {x0 + 12} {30 + plot_h / 2})">ops/s</text>')
        for strategy in STRATEGIES:
            points = [(px(t), py(data[(leaf, strategy, t)])) for t in threads
                      if (leaf, strategy, t) in data]
            if not points:
                continue
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[strategy]}" stroke-width="2"/>')
            for x, y in points:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[strategy]}"/>')
    for i, strategy in enumerate(STRATEGIES):
        x = 10 + 55 + i * 90
        parts.append(f'<rect x="{x}" y="{height + 22}" width="12" height="12" fill="{COLORS[strategy]}"/>')
        parts.append(f'<text x="{x + 16}" y="{height + 32}">{strategy}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--criterion", default="target/criterion", type=pathlib.Path)
    parser.add_argument("--svg", type=pathlib.Path, help="also write the plot here")
    args = parser.parse_args()
    data = load(args.criterion)
    if not data:
        raise SystemExit(f"no scheduler benchmark results under {args.criterion}")
    print(table(data))
    if args.svg:
        args.svg.write_text(svg(data))


if __name__ == "__main__":
    main()
