#!/usr/bin/env python3
"""Which memory the descents of `scheduler/benches/scheduler.rs --instructions` write, from
valgrind's lackey trace: every store between its two marker stores, classified as the stack
(within 8 MiB of the address it prints) or a heap or static address, and the heap addresses
grouped by the share of the descents that wrote them.

    cargo bench -p chainlock-scheduler --bench scheduler --no-run
    BIN=$(ls -t target/release/deps/scheduler-* | grep -v '\\.d$' | head -1)
    export SCHEDULER_STORES=1 SCHEDULER_STRATEGY=optimistic
    # Valgrind lays a process out the same way every run: the addresses first, then the trace.
    valgrind --tool=none "$BIN" --instructions >/tmp/stores.addresses
    valgrind --tool=lackey --trace-mem=yes --log-file=/dev/stderr "$BIN" --instructions \\
        2>&1 >/dev/null | grep -E '^ [SM] ' | python3 scheduler/stores.py /tmp/stores.addresses 10000

A write to the registry or a lecture (its lock, node or children container) would be an
address written by every descent (the registry) or by about one descent in 64 (a lecture);
the seats (10,000), the classes (about 1,250) and their lines are each written by a few
descents in ten thousand. What every descent writes is the thread's own epoch slot."""
import sys

addresses, calls = sys.argv[1], int(sys.argv[2])
mark = stack = None
for line in open(addresses):
    words = line.split()
    if words and words[0] == "mark":
        mark = int(words[1], 16)
    elif words and words[0] == "stack":
        stack = int(words[1], 16)
assert mark is not None and stack is not None, "run with SCHEDULER_STORES=1"
marks, stack_stores, per_line = 0, 0, {}
for line in sys.stdin:
    if not (line.startswith(" S ") or line.startswith(" M ")):
        continue
    addr = int(line[3:].split(",")[0], 16)
    if addr == mark:
        marks += 1
        if marks == 2:
            break
        continue
    if marks != 1:
        continue
    if abs(addr - stack) < (8 << 20):
        stack_stores += 1
    else:
        per_line[addr // 64] = per_line.get(addr // 64, 0) + 1
assert marks == 2, f"saw {marks} marker stores"
heap = sum(per_line.values())
print(f"{calls} descents: {stack_stores / calls:.2f} stack stores per descent, "
      f"{heap / calls:.2f} other stores per descent on {len(per_line)} distinct cache lines")
bands = [(0.5, "written by half the descents or more"), (0.01, "by 1 % to 50 %"),
         (0.001, "by 0.1 % to 1 %"), (0.0, "by fewer than 0.1 % (one in a thousand)")]
for low, label in bands:
    lines = [(l, n) for l, n in per_line.items() if n / calls >= low and all(
        n / calls < high for high, _ in bands if high > low)]
    stores = sum(n for _, n in lines)
    print(f"  lines {label}: {len(lines)} lines, {stores / calls:.2f} stores per descent")
    if low >= 0.01:
        for l, n in sorted(lines, key=lambda x: -x[1])[:4]:
            print(f"    line {l * 64:#x}: {n} stores ({n / calls:.3f} per descent)")
