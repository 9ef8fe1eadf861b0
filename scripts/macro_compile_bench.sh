#!/usr/bin/env bash
# Compile-time cost of `chain_locker!`: generates a throwaway crate with 1, 20 and 100 named
# 3-level lockers (`shared A, shared B, C`, each locker its own level types), and reports for
# each the `cargo check` time of that crate alone (dependencies already built; median of 3
# runs after touching the source) and the line count of its `cargo expand` output
# (rustfmt-formatted, so lines are comparable between versions).
#
#   bash scripts/macro_compile_bench.sh [CHAINLOCK_DIR] [FEATURES]
#
# CHAINLOCK_DIR: the `chainlock/` package to measure (default: this checkout's); FEATURES:
# chainlock features to enable (default: none, as a user's default build). Needs
# cargo-expand. Writes nothing outside a temporary directory.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
chainlock=$(cd "${1:-$here/chainlock}" && pwd)
features=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

generate() { # $1: number of lockers
    local n=$1 dir=$work/bench-$1
    mkdir -p "$dir/src"
    cat >"$dir/Cargo.toml" <<TOML
[package]
name = "bench-$n"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
chainlock = { path = "$chainlock", features = [${features:+\"$features\"}] }

[workspace]
TOML
    {
        echo '#![allow(dead_code)]'
        echo 'use chainlock::chain_locker;'
        for i in $(seq 1 "$n"); do
            echo "pub struct A$i { pub b: Option<std::sync::Arc<chainlock::parking_lot::RwLock<B$i>>> }"
            echo "pub struct B$i { pub c: Option<std::sync::Arc<chainlock::parking_lot::Mutex<C$i>>> }"
            echo "pub struct C$i { pub value: u64 }"
            echo "chain_locker! { pub struct Locker$i(shared A$i, shared B$i, C$i); }"
        done
    } >"$dir/src/lib.rs"
    echo "$dir"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

export CARGO_TARGET_DIR=$work/target
printf '| lockers | `cargo check` (s) | expanded lines | lines per locker |\n|---:|---:|---:|---:|\n'
base_lines=
for n in 1 20 100; do
    dir=$(generate "$n")
    (cd "$dir" && cargo check -q 2>/dev/null) # dependencies, once
    times=$(for _ in 1 2 3; do
        touch "$dir/src/lib.rs"
        start=$(date +%s.%N)
        (cd "$dir" && cargo check -q)
        end=$(date +%s.%N)
        echo "$end - $start" | bc
    done | median)
    lines=$(cd "$dir" && cargo expand --lib 2>/dev/null | wc -l)
    # Lines per locker: what each locker beyond the first adds.
    if [ -z "$base_lines" ]; then
        base_lines=$lines
        per=-
    else
        per=$(((lines - base_lines) / (n - 1)))
    fi
    printf '| %d | %.2f | %d | %s |\n' "$n" "$times" "$lines" "$per"
done
