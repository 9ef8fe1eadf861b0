#!/usr/bin/env bash
# Miri and loom, the test command's (scripts/test.sh) checks that need their own toolchain or
# cfg: each on its own target directory (target/miri, target/loom), so they run beside the
# main test step. Also runnable alone: `bash scripts/miri-loom.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

step "miri: owned mapped guards (chainlock::mapped), the hybrid lock's optimistic reads racing writers (chainlock::hybrid, data-race detector on), OrderedMap's readers racing splits, under stacked and tree borrows; the optimistic walk, the epoch containers and generated optimistic descents racing writers (tree borrows)"
# Miri is a nightly component: a machine where it cannot be installed fails this command.
rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1 \
  || { printf '\nFAILED: %s\n' "miri could not be installed (rustup component add miri rust-src --toolchain nightly)" >&2; exit 1; }
cargo +nightly miri test -p chainlock --lib --target-dir target/miri mapped
MIRIFLAGS="-Zmiri-tree-borrows" cargo +nightly miri test -p chainlock --lib --target-dir target/miri mapped
cargo +nightly miri test -p chainlock --lib --target-dir target/miri hybrid
MIRIFLAGS="-Zmiri-tree-borrows" cargo +nightly miri test -p chainlock --lib --target-dir target/miri hybrid
cargo +nightly miri test -p chainlock-trees --test ordered_map_miri --target-dir target/miri
MIRIFLAGS="-Zmiri-tree-borrows" cargo +nightly miri test -p chainlock-trees --test ordered_map_miri --target-dir target/miri
# Optimistic walkers racing a writer, and the epoch containers' lookups racing inserts,
# removes and closes, under Miri's data-race detector; crossbeam-epoch passes Tree Borrows
# only (as in crossbeam's own CI), exposes provenance, and its global collector is never
# dropped (its lists, behind tagged integers, read as leaks at exit: the freeing of removed
# children is asserted by the tests' drop counters instead).
MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks" \
  cargo +nightly miri test -p chainlock --lib --target-dir target/miri walk::optimistic
MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks" \
  cargo +nightly miri test -p chainlock --lib --target-dir target/miri chain::epoch
# Generated optimistic descents (chain_locker!'s `optimistic` levels) racing writers that
# insert, remove, close children and bump versions at every level.
MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks" \
  cargo +nightly miri test -p chainlock --lib --target-dir target/miri chain::optimistic

step "loom models (RUSTFLAGS=--cfg loom)"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" \
  cargo test -p chainlock --lib --release --features telemetry --target-dir target/loom -- loom_
