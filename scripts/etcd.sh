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
# Beside it, three single-member clusters for the security tests, with a throwaway CA made here
# with openssl (as scripts/pg.sh does for PostgreSQL):
#   CHAINLOCK_ETCD_TLS_ENDPOINT    https://127.0.0.1:PORT, a server certificate for 127.0.0.1 and
#                                  localhost signed by the CA
#   CHAINLOCK_ETCD_TLS_CA          the CA's certificate (PEM)
#   CHAINLOCK_ETCD_TLS_WRONG_CA    another CA's certificate (PEM), which signed nothing here
#   CHAINLOCK_ETCD_MTLS_ENDPOINT   https://127.0.0.1:PORT that also requires a client
#                                  certificate signed by the CA (--client-cert-auth)
#   CHAINLOCK_ETCD_TLS_CLIENT_CERT, CHAINLOCK_ETCD_TLS_CLIENT_KEY  such a client certificate and
#                                  its key (PEM)
#   CHAINLOCK_ETCD_AUTH_ENDPOINT   http://127.0.0.1:PORT with auth enabled: user `root` and user
#                                  `locks` (read-write on keys under `locks/` only), both with the
#                                  password in CHAINLOCK_ETCD_AUTH_PASSWORD
# The partition tests cut a worker process (run as a uid of its own with `setpriv`) from members
# with iptables rules that match that uid only (installs `iptables`, and `util-linux` for
# setpriv, if missing); they need root, as the rest of this script's set-up.
# And Go's own lock client, for the interop test (installs Debian's `golang-go` and
# `golang-etcd-server-dev` if missing, and builds scripts/go-mutex offline in GOPATH mode):
#   CHAINLOCK_ETCD_GO_MUTEX        the built `go-mutex` (see scripts/go-mutex/main.go)
# If CHAINLOCK_ETCD_ENDPOINTS is already set, uses that cluster and starts nothing.

chainlock_etcd_start() {
  if [[ -n "${CHAINLOCK_ETCD_ENDPOINTS:-}" ]]; then
    echo "etcd.sh: using the cluster at CHAINLOCK_ETCD_ENDPOINTS"
    return 0
  fi
  local packages="etcd-server etcd-client protobuf-compiler openssl golang-go golang-etcd-server-dev iptables util-linux"
  if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1 \
    || ! command -v iptables >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1 \
    || ! command -v protoc >/dev/null 2>&1 || ! command -v openssl >/dev/null 2>&1 \
    || ! command -v go >/dev/null 2>&1 || [[ ! -d /usr/share/gocode/src/go.etcd.io/etcd/clientv3 ]]; then
    echo "etcd.sh: installing $packages (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    apt-get install -y -qq $packages >/dev/null 2>&1 \
      || { apt-get update -qq && apt-get install -y -qq $packages >/dev/null; } \
      || { echo "etcd.sh: apt-get could not install $packages" >&2; return 1; }
  fi
  # Debian's unit may have started a system etcd on 2379: ours never uses fixed ports.
  CHAINLOCK_ETCD_BASE="$(mktemp -d -t chainlock-etcd.XXXXXX)"
  local ports
  # Twelve free ports (bound then released together, so they are distinct): clients 0..2 and
  # peers 3..5 of the three members, then client and peer of the TLS, mTLS and auth members.
  ports=($(python3 -c '
import socket
socks = [socket.socket() for _ in range(12)]
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
  chainlock_etcd_security "${ports[@]:6:6}" || return 1
  chainlock_etcd_go_mutex || return 1
  export CHAINLOCK_ETCD_ENDPOINTS="$endpoints"
  export CHAINLOCK_ETCD_MEMBER="$CHAINLOCK_ETCD_BASE/member.sh"
  export CHAINLOCK_ETCD_BASE
  echo "etcd.sh: etcd $(etcd --version | awk '/etcd Version/ {print $3}'), three members at $CHAINLOCK_ETCD_ENDPOINTS"
}

# Starts a single-member cluster NAME with client URL $2 and peer port $3, extra flags after,
# and waits until it answers (etcdctl flags for that in ETCD_HEALTH_FLAGS).
chainlock_etcd_single() {
  local name="$1" client="$2" peer="http://127.0.0.1:$3"
  shift 3
  (
    cd "$CHAINLOCK_ETCD_BASE"
    nohup etcd --name "$name" --data-dir "$CHAINLOCK_ETCD_BASE/$name" \
      --listen-client-urls "$client" --advertise-client-urls "$client" \
      --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
      --initial-cluster "$name=$peer" --initial-cluster-token "chainlock-$name" \
      --initial-cluster-state new --logger zap --log-outputs stderr "$@" \
      >>"$CHAINLOCK_ETCD_BASE/$name.log" 2>&1 &
    echo $! >"$CHAINLOCK_ETCD_BASE/$name.pid"
  )
  local try
  for try in $(seq 1 120); do
    # shellcheck disable=SC2086
    if etcdctl --endpoints="$client" $ETCD_HEALTH_FLAGS --command-timeout=2s endpoint health >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.5
  done
  echo "etcd.sh: the $name member did not become healthy within 60 s" >&2
  tail -n 5 "$CHAINLOCK_ETCD_BASE/$name.log" >&2 || true
  return 1
}

# The TLS, mTLS and auth members, on the ports given (client, peer for each).
chainlock_etcd_security() {
  local tls="$CHAINLOCK_ETCD_BASE/tls"
  mkdir -p "$tls"
  (
    set -e
    cd "$tls"
    for ca in ca wrong-ca; do
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=chainlock test $ca" \
        -keyout "$ca.key" -out "$ca.crt" 2>/dev/null
    done
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=locks" \
      -keyout client.key -out client.csr 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile client.ext -out client.crt 2>/dev/null
    chmod 600 server.key client.key
  ) || { echo "etcd.sh: could not make the TLS certificates" >&2; return 1; }
  local server=(--cert-file "$tls/server.crt" --key-file "$tls/server.key")
  ETCD_HEALTH_FLAGS="--cacert=$tls/ca.crt" chainlock_etcd_single tls "https://127.0.0.1:$1" "$2" \
    "${server[@]}" || return 1
  ETCD_HEALTH_FLAGS="--cacert=$tls/ca.crt --cert=$tls/client.crt --key=$tls/client.key" \
    chainlock_etcd_single mtls "https://127.0.0.1:$3" "$4" \
    "${server[@]}" --client-cert-auth --trusted-ca-file "$tls/ca.crt" || return 1
  local auth="http://127.0.0.1:$5" password="chainlock-test-$RANDOM$RANDOM"
  ETCD_HEALTH_FLAGS="" chainlock_etcd_single auth "$auth" "$6" || return 1
  (
    set -e
    ctl() { etcdctl --endpoints="$auth" --command-timeout=5s "$@" >>"$CHAINLOCK_ETCD_BASE/auth-setup.log" 2>&1; }
    ctl user add "root:$password"
    ctl user add "locks:$password"
    ctl role add locks
    ctl role grant-permission locks --prefix=true readwrite locks/
    ctl user grant-role locks locks
    ctl auth enable
  ) || { echo "etcd.sh: could not enable auth on the auth member" >&2; cat "$CHAINLOCK_ETCD_BASE/auth-setup.log" >&2; return 1; }
  export CHAINLOCK_ETCD_TLS_ENDPOINT="https://127.0.0.1:$1"
  export CHAINLOCK_ETCD_MTLS_ENDPOINT="https://127.0.0.1:$3"
  export CHAINLOCK_ETCD_TLS_CA="$tls/ca.crt"
  export CHAINLOCK_ETCD_TLS_WRONG_CA="$tls/wrong-ca.crt"
  export CHAINLOCK_ETCD_TLS_CLIENT_CERT="$tls/client.crt"
  export CHAINLOCK_ETCD_TLS_CLIENT_KEY="$tls/client.key"
  export CHAINLOCK_ETCD_AUTH_ENDPOINT="$auth"
  export CHAINLOCK_ETCD_AUTH_PASSWORD="$password"
}

# Builds scripts/go-mutex offline (GOPATH mode, Debian's Go sources) into the temp dir.
chainlock_etcd_go_mutex() {
  local source
  source="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/go-mutex"
  mkdir -p "$CHAINLOCK_ETCD_BASE/go/src/go-mutex"
  cp "$source/main.go" "$CHAINLOCK_ETCD_BASE/go/src/go-mutex/"
  # Go's build cache: the usual one (kept between runs), or the temp dir without a HOME.
  local cache="${GOCACHE:-}"
  if [[ -z "$cache" ]]; then
    if [[ -n "${HOME:-}" ]]; then cache="$HOME/.cache/go-build"; else cache="$CHAINLOCK_ETCD_BASE/go-cache"; fi
  fi
  (
    cd "$CHAINLOCK_ETCD_BASE/go/src/go-mutex"
    GO111MODULE=off GOPATH="$CHAINLOCK_ETCD_BASE/go:/usr/share/gocode" GOFLAGS="" GOPROXY=off \
      GOCACHE="$cache" nice go build -o "$CHAINLOCK_ETCD_BASE/go-mutex" .
  ) || { echo "etcd.sh: could not build scripts/go-mutex (Go's concurrency.Mutex)" >&2; return 1; }
  export CHAINLOCK_ETCD_GO_MUTEX="$CHAINLOCK_ETCD_BASE/go-mutex"
}

chainlock_etcd_stop() {
  if [[ -n "${CHAINLOCK_ETCD_BASE:-}" ]]; then
    local n pid
    for n in 1 2 3 tls mtls auth; do
      pid="$(cat "$CHAINLOCK_ETCD_BASE/member-$n.pid" "$CHAINLOCK_ETCD_BASE/$n.pid" 2>/dev/null || true)"
      if [[ -n "$pid" ]]; then
        kill -CONT "$pid" 2>/dev/null || true
        kill -9 "$pid" 2>/dev/null || true
      fi
    done
    rm -rf "$CHAINLOCK_ETCD_BASE"
    unset CHAINLOCK_ETCD_BASE CHAINLOCK_ETCD_ENDPOINTS CHAINLOCK_ETCD_MEMBER CHAINLOCK_ETCD_GO_MUTEX \
      CHAINLOCK_ETCD_TLS_ENDPOINT CHAINLOCK_ETCD_MTLS_ENDPOINT CHAINLOCK_ETCD_TLS_CA \
      CHAINLOCK_ETCD_TLS_WRONG_CA CHAINLOCK_ETCD_TLS_CLIENT_CERT CHAINLOCK_ETCD_TLS_CLIENT_KEY \
      CHAINLOCK_ETCD_AUTH_ENDPOINT CHAINLOCK_ETCD_AUTH_PASSWORD
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
