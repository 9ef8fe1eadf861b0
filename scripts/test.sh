#!/usr/bin/env bash
# The test command of the README: everything CI checks, with its own set-up, on a fresh
# machine. Run from anywhere: `bash scripts/test.sh`. A step it promises either runs or fails
# the command (with the reason): nothing is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step says how long the command has run (the CI budget is the whole run's time).
step() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
fail() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

# Every test runner's output also goes to this log; the last line sums up its results.
mkdir -p target
results=target/test-results.log
: > "$results"
run_tests() { "$@" 2>&1 | tee -a "$results"; }

step "tools: rustfmt, clippy, cargo-expand (macrotest snapshots), protoc (the etcd feature), Go (the etcd interop test, the pprof reader)"
rustup component add rustfmt clippy >/dev/null 2>&1 \
  || fail "rustup could not install rustfmt and clippy (the format and clippy steps need them)"
if ! command -v cargo-expand >/dev/null 2>&1; then
  cargo install cargo-expand --locked --quiet || fail "cargo could not install cargo-expand (the macrotest snapshots need it)"
fi

if ! command -v protoc >/dev/null 2>&1 || ! command -v go >/dev/null 2>&1 \
  || [[ ! -d /usr/share/gocode/src/go.etcd.io/etcd/clientv3 ]]; then
  # The etcd feature (the etcd-client crate) needs protoc to build: clippy and check build it.
  # The interop test builds Go's concurrency.Mutex (scripts/go-mutex) offline from Debian's
  # golang-etcd-server-dev (scripts/etcd.sh builds it).
  packages="protobuf-compiler golang-go golang-etcd-server-dev"
  echo "installing $packages (apt-get): protoc for the etcd feature, Go's etcd client for the interop test"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  { apt-get install -y -qq $packages >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq $packages >/dev/null; }; } \
    || fail "apt-get could not install $packages (protoc: the etcd feature; Go: the etcd interop test)"
fi

# The telemetry's pprof export is checked by Go's own reader (`go tool pprof`, from golang-go
# above): `telemetry::pprof::tests::go_tool_pprof_reads_it`.
go tool pprof -h >/dev/null 2>&1 || fail "go is installed but \`go tool pprof\` does not run"
# The pprof reader test must run, not pass with a note.
export CHAINLOCK_REQUIRE_GO=1

step "format"
cargo fmt --all --check

step "clippy (all targets, all features, warnings are errors)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

step "the README's first command builds only the service: none of the suite's heavy dependencies"
heavy=$(cargo tree -p chainlock-scheduler -e normal,build --prefix none \
  | grep -E '^(criterion|plotters|tokio|tokio-postgres|trybuild|macrotest|lockable) ' | sort -u || true)
if [ -n "$heavy" ]; then
  printf 'cargo run -p chainlock-scheduler would build:\n%s\n' "$heavy" >&2
  exit 1
fi

step "the stated rust-version builds (with a toolchain of exactly that version)"
# `rust-version` of the workspace (e.g. "1.95" means 1.95.0). When the default toolchain is that
# version, the clippy step above has already checked every target of every member with it
# (all features, --locked): nothing is built twice. Otherwise a toolchain named after it
# (`rustup run 1.95` / `1.95.0`) checks them.
msrv=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print({p["rust_version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "chainlock"}.pop())')
want=$msrv; [[ $want =~ ^[0-9]+\.[0-9]+$ ]] && want="$want.0"
if [[ "$(rustc --version | awk '{print $2}')" == "$want" ]]; then
  echo "rust-version $msrv: the default toolchain is $(rustc --version): checked by the clippy step"
else
  msrv_toolchain=""
  for toolchain in "$msrv" "$want"; do
    if [[ "$(rustup run "$toolchain" rustc --version 2>/dev/null | awk '{print $2}')" == "$want" ]]; then
      msrv_toolchain=$toolchain
      break
    fi
  done
  [[ -n "$msrv_toolchain" ]] \
    || fail "no toolchain of rust-version $msrv: \`rustup toolchain install $want\` (the default is $(rustc --version))"
  echo "rust-version $msrv: $(rustup run "$msrv_toolchain" rustc --version) ($msrv_toolchain)"
  rustup run "$msrv_toolchain" cargo check --workspace --all-targets --all-features --locked --quiet
fi

step "features of chainlock: none, and each alone"
features=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(*sorted(f for p in json.load(sys.stdin)["packages"] if p["name"] == "chainlock" for f in p["features"] if f != "default"))')
[[ -n "$features" ]] || fail "no features of chainlock read from cargo metadata"
echo "none"
# A warning here (an import used only with another feature) is an error, as clippy's are.
check_alone() {
  local out
  out=$(cargo check -p chainlock --no-default-features "$@" --quiet 2>&1) || { echo "$out"; fail "cargo check $*"; }
  [[ -z "$out" ]] || { echo "$out"; grep -q '^warning' <<<"$out" && fail "warnings in cargo check $*"; }
}
check_alone
for feature in $features; do
  echo "$feature"
  check_alone --features "$feature"
done

step "docs (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --quiet

step "PostgreSQL for the distributed tests: a throwaway cluster, stopped on exit (scripts/pg.sh)"
# Exports CHAINLOCK_PG_URL and CHAINLOCK_PG_RESTART; installs PostgreSQL if it is missing.
source scripts/pg.sh

step "etcd for the distributed tests: a throwaway three-member cluster, stopped on exit (scripts/etcd.sh)"
# Exports CHAINLOCK_ETCD_ENDPOINTS and CHAINLOCK_ETCD_MEMBER (fault injection); installs etcd
# (and protoc, which the etcd feature needs to build) if missing.
source scripts/etcd.sh

step "build: every test, benchmark and example (all members, all features)"
# Built once here; the steps below run them (the examples' binaries directly).
cargo test --workspace --all-features --no-run --quiet
cargo test --workspace --benches --all-features --no-run --quiet
cargo build --workspace --all-features --examples --quiet
examples=$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/examples

step "miri and loom: started in the background (their own target directories, nice 10); their output is shown after the examples"
# Both are single-threaded for most of their time (Miri interprets, loom explores) while the
# test step below mostly waits (servers, timeouts, trybuild's one rustc at a time): run side
# by side, the command takes minutes less. Their output goes to its own log, shown whole below.
checks_log=target/miri-loom.log
# Its own session (setsid), so that a failure below stops it with all its processes.
setsid --wait nice -n 10 bash scripts/miri-loom.sh > "$checks_log" 2>&1 < /dev/null &
checks_pid=$!
# A failure below must not leave it running (after the servers' own EXIT traps, kept).
stop_checks() { kill -- -"$checks_pid" 2>/dev/null || true; }
previous_exit_trap="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
trap "stop_checks; ${previous_exit_trap:-true}" EXIT

step "tests: unit, integration, trybuild, macrotest, doc tests incl. the README's (all members, all features)"
run_tests cargo test --workspace --all-features

step "benchmarks run once as tests (all members)"
run_tests cargo test --workspace --benches --all-features

step "example: the file system on walks of run-time depth, under concurrent clients, checked"
"$examples/filesystem" --clients 8 --ops 5000

step "example: workers appending records under named locks, every backend, verified"
"$examples/workers" --workers 4 --messages 200
"$examples/workers" --workers 4 --messages 200 --backend postgres --url "$CHAINLOCK_PG_URL"
"$examples/workers" --workers 4 --messages 100 --backend etcd --url "$CHAINLOCK_ETCD_ENDPOINTS"
step "example: workers with standbys (one elected writer per type, its first leader killed; on PostgreSQL and etcd one paused past its bound and resumed), every backend, verified"
"$examples/workers" --standbys 2 --messages 300
"$examples/workers" --standbys 2 --messages 300 --pause --backend postgres --url "$CHAINLOCK_PG_URL"
"$examples/workers" --standbys 2 --messages 150 --pause --backend etcd --url "$CHAINLOCK_ETCD_ENDPOINTS"

step "miri and loom (from the background): waiting for them; their output"
checks_status=0
wait "$checks_pid" || checks_status=$?
cat "$checks_log" | tee -a "$results"
[[ $checks_status -eq 0 ]] || fail "miri or loom (exit $checks_status): see above"

passed=$(grep -Eo '^test result: [a-zA-Z]+\. [0-9]+ passed' "$results" | awk '{s += $4} END {print s + 0}')
failed=$(grep -Eo '[0-9]+ failed;' "$results" | awk '{s += $1} END {print s + 0}')
printf '\nall tests: %s passed, %s failed (in %dm%02ds)\n' "$passed" "$failed" $((SECONDS / 60)) $((SECONDS % 60))
