#!/usr/bin/env bash
# A throwaway three-member etcd cluster for chainlock's etcd tests and benchmarks.
#
#   source scripts/etcd.sh          # in a bash script: starts it, stops and deletes it on EXIT
#   bash scripts/etcd.sh CMD ARGS   # runs CMD with the cluster, then stops and deletes it
#
# Installs what is missing with apt-get (Debian's `etcd-server` and `etcd-client`, and
# `protobuf-compiler`: the `etcd-client` crate needs `protoc` to build). Starts three members on
# 127.0.0.1, on free ports, with their data in a temp dir, `--pre-vote` on (a member that comes
# back does not disrupt the leader), and waits until the cluster is healthy. Runs fine as root.
# Exports:
#   CHAINLOCK_ETCD_ENDPOINTS  the client URLs, comma-separated (http://127.0.0.1:PORT,...)
#   CHAINLOCK_ETCD_MEMBER     a script for fault tests: `$CHAINLOCK_ETCD_MEMBER CMD N` with N in
#                             1..3 and CMD one of
#                               kill     kill -9 of member N (returns once it is dead)
#                               start    starts member N again on its data (after kill)
#                               stop     SIGSTOP of member N;  cont: SIGCONT
#                               pid      prints its process id
#                               endpoint prints its client URL
#                             and `$CHAINLOCK_ETCD_MEMBER leader` prints the leader's N.
#   CHAINLOCK_ETCD_BASE       the temp dir (member N's data in member-N/, its log in member-N.log)
# If CHAINLOCK_ETCD_ENDPOINTS is already set, uses that cluster and starts nothing.

chainlock_etcd_start() {
  if [[ -n "${CHAINLOCK_ETCD_ENDPOINTS:-}" ]]; then
    echo "etcd.sh: using the cluster at CHAINLOCK_ETCD_ENDPOINTS"
    return 0
  fi
  if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1 \
    || ! command -v protoc >/dev/null 2>&1; then
    echo "etcd.sh: installing etcd-server etcd-client protobuf-compiler (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq etcd-server etcd-client protobuf-compiler >/dev/null 2>&1 \
      || { apt-get update -qq && apt-get install -y -qq etcd-server etcd-client protobuf-compiler >/dev/null; } \
      || { echo "etcd.sh: apt-get could not install etcd" >&2; return 1; }
  fi
  # Debian's unit may have started a system etcd on 2379: ours never uses fixed ports.
  CHAINLOCK_ETCD_BASE="$(mktemp -d -t chainlock-etcd.XXXXXX)"
  local ports
  # Six free ports (bound then released together, so they are distinct).
  ports=($(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
for s in socks:
    s.close()
')) || { echo "etcd.sh: no free ports" >&2; return 1; }
  local cluster="" n
  for n in 1 2 3; do
    cluster+="${cluster:+,}m$n=http://127.0.0.1:${ports[$((n + 2))]}"
  done
  local endpoints=""
  for n in 1 2 3; do
    local client="http://127.0.0.1:${ports[$((n - 1))]}" peer="http://127.0.0.1:${ports[$((n + 2))]}"
    endpoints+="${endpoints:+,}$client"
    cat >"$CHAINLOCK_ETCD_BASE/start-$n.sh" <<START
#!/usr/bin/env bash
cd "$CHAINLOCK_ETCD_BASE"
nohup etcd --name m$n --data-dir "$CHAINLOCK_ETCD_BASE/member-$n" \\
  --listen-client-urls $client --advertise-client-urls $client \\
  --listen-peer-urls $peer --initial-advertise-peer-urls $peer \\
  --initial-cluster $cluster --initial-cluster-token chainlock-test --initial-cluster-state new \\
  --pre-vote --logger zap --log-outputs stderr \\
  >>"$CHAINLOCK_ETCD_BASE/member-$n.log" 2>&1 &
echo \$! >"$CHAINLOCK_ETCD_BASE/member-$n.pid"
START
    echo "$client" >"$CHAINLOCK_ETCD_BASE/member-$n.endpoint"
  done
  cat >"$CHAINLOCK_ETCD_BASE/member.sh" <<'MEMBER'
#!/usr/bin/env bash
# Fault injection on one member of the test cluster (see scripts/etcd.sh).
set -euo pipefail
base="$(dirname "$(readlink -f "$0")")"
case "$1" in
  leader)
    for n in 1 2 3; do
      status="$(ETCDCTL_API=3 etcdctl --endpoints="$(cat "$base/member-$n.endpoint")" \
        --command-timeout=2s endpoint status -w fields 2>/dev/null || true)"
      id="$(sed -n 's/^"MemberID" : //p' <<<"$status")"
      if [[ -n "$id" && "$id" == "$(sed -n 's/^"Leader" : //p' <<<"$status")" ]]; then
        echo "$n"; exit 0
      fi
    done
    echo "no leader" >&2; exit 1 ;;
esac
n="${2:?member.sh: which member (1..3)?}"; pid="$(cat "$base/member-$n.pid")"
case "$1" in
  kill)
    kill -9 "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done ;;
  start) "$base/start-$n.sh" ;;
  stop) kill -STOP "$pid" ;;
  cont) kill -CONT "$pid" ;;
  pid) echo "$pid" ;;
  endpoint) cat "$base/member-$n.endpoint" ;;
  *) echo "member.sh: unknown command $1" >&2; exit 2 ;;
esac
MEMBER
  chmod 755 "$CHAINLOCK_ETCD_BASE"/*.sh
  for n in 1 2 3; do
    "$CHAINLOCK_ETCD_BASE/start-$n.sh"
  done
  local try
  for try in $(seq 1 120); do
    if ETCDCTL_API=3 etcdctl --endpoints="$endpoints" --command-timeout=2s endpoint health >/dev/null 2>&1; then
      break
    fi
    if [[ $try == 120 ]]; then
      echo "etcd.sh: the cluster did not become healthy within 60 s" >&2
      tail -n 5 "$CHAINLOCK_ETCD_BASE"/member-*.log >&2 || true
      return 1
    fi
    sleep 0.5
  done
  export ETCDCTL_API=3
  export CHAINLOCK_ETCD_ENDPOINTS="$endpoints"
  export CHAINLOCK_ETCD_MEMBER="$CHAINLOCK_ETCD_BASE/member.sh"
  export CHAINLOCK_ETCD_BASE
  echo "etcd.sh: etcd $(etcd --version | awk '/etcd Version/ {print $3}'), three members at $CHAINLOCK_ETCD_ENDPOINTS"
}

chainlock_etcd_stop() {
  if [[ -n "${CHAINLOCK_ETCD_BASE:-}" ]]; then
    local n pid
    for n in 1 2 3; do
      pid="$(cat "$CHAINLOCK_ETCD_BASE/member-$n.pid" 2>/dev/null || true)"
      if [[ -n "$pid" ]]; then
        kill -CONT "$pid" 2>/dev/null || true
        kill -9 "$pid" 2>/dev/null || true
      fi
    done
    rm -rf "$CHAINLOCK_ETCD_BASE"
    unset CHAINLOCK_ETCD_BASE CHAINLOCK_ETCD_ENDPOINTS CHAINLOCK_ETCD_MEMBER
  fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # Executed: run the given command with the cluster.
  set -euo pipefail
  trap chainlock_etcd_stop EXIT
  trap 'exit 130' INT TERM
  chainlock_etcd_start
  "$@"
else
  # Sourced: start now, stop when the sourcing shell exits. pg.sh's EXIT trap (if sourced
  # before) is kept: both run.
  previous_exit_trap="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
  trap "chainlock_etcd_stop; ${previous_exit_trap:-true}" EXIT
  unset previous_exit_trap
  chainlock_etcd_start
fi
