#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for chainlock's distributed tests and benchmarks.
#
#   source scripts/pg.sh          # in a bash script: starts it, stops and deletes it on EXIT
#   bash scripts/pg.sh CMD ARGS   # runs CMD with the cluster, then stops and deletes it
#
# Installs PostgreSQL with apt-get if no `initdb` is found. Creates the cluster in a temp dir,
# owned by the `postgres` user when run as root (the server refuses to run as root), with trust
# authentication on 127.0.0.1 only, on a free port, accepting 1,100 connections (a benchmark opens
# 1,000 at once). Exports:
#   CHAINLOCK_PG_URL      postgres://postgres@127.0.0.1:PORT/postgres
#   CHAINLOCK_PG_RESTART  a script that restarts the server (fast shutdown: sessions are cut)
#   CHAINLOCK_PG_CRASH    a script that restarts it after an immediate shutdown (crash recovery)
#   CHAINLOCK_PG_DATA     the data directory
# The server also accepts TLS (ssl=on), with a certificate for 127.0.0.1 and localhost signed by
# a throwaway CA made here with openssl (installed with apt-get if missing). Exports:
#   CHAINLOCK_PG_TLS_URL       the same server with sslmode=require
#   CHAINLOCK_PG_TLS_CA        the CA's certificate (PEM): verifies the server's
#   CHAINLOCK_PG_TLS_WRONG_CA  another CA's certificate (PEM), which did not sign it
# If CHAINLOCK_PG_URL is already set, uses that server and starts nothing.

chainlock_pg_start() {
  if [[ -n "${CHAINLOCK_PG_URL:-}" ]]; then
    echo "pg.sh: using the server at CHAINLOCK_PG_URL"
    return 0
  fi
  local bin
  bin="$(chainlock_pg_bindir)"
  if [[ -z "$bin" ]]; then
    echo "pg.sh: installing PostgreSQL (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
    bin="$(chainlock_pg_bindir)"
    [[ -n "$bin" ]] || { echo "pg.sh: no initdb after installing postgresql" >&2; return 1; }
  fi
  local as=()
  CHAINLOCK_PG_BASE="$(mktemp -d -t chainlock-pg.XXXXXX)"
  if [[ "$(id -u)" == 0 ]] && ! id postgres >/dev/null 2>&1; then
    # The server refuses to run as root; Debian's package creates this user, a bare image may not.
    useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
  fi
  if [[ "$(id -u)" == 0 ]]; then
    as=(runuser -u postgres --)
    chown postgres: "$CHAINLOCK_PG_BASE"
    chmod 755 "$CHAINLOCK_PG_BASE"
  fi
  local data="$CHAINLOCK_PG_BASE/data"
  chainlock_pg_certificates "$CHAINLOCK_PG_BASE/tls" || return 1
  if [[ "$(id -u)" == 0 ]]; then
    chown -R postgres: "$CHAINLOCK_PG_BASE/tls"
  fi
  local tls="-c ssl=on -c ssl_cert_file=$CHAINLOCK_PG_BASE/tls/server.crt -c ssl_key_file=$CHAINLOCK_PG_BASE/tls/server.key"
  "${as[@]}" "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >"$CHAINLOCK_PG_BASE/initdb.log" 2>&1 \
    || { cat "$CHAINLOCK_PG_BASE/initdb.log" >&2; return 1; }
  local port try
  for try in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 30000))
    if "${as[@]}" "$bin/pg_ctl" -D "$data" -l "$CHAINLOCK_PG_BASE/server.log" -w -t 60 \
      -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$CHAINLOCK_PG_BASE -c max_connections=1100 $tls" \
      start >/dev/null; then
      break
    fi
    port=""
    tail -n 5 "$CHAINLOCK_PG_BASE/server.log" >&2 || true
  done
  [[ -n "$port" ]] || { echo "pg.sh: could not start PostgreSQL" >&2; return 1; }
  cat >"$CHAINLOCK_PG_BASE/restart.sh" <<RESTART
#!/usr/bin/env bash
exec ${as[*]} "$bin/pg_ctl" -D "$data" -l "$CHAINLOCK_PG_BASE/server.log" -w -t 60 -m fast restart >/dev/null
RESTART
  cat >"$CHAINLOCK_PG_BASE/crash.sh" <<CRASH
#!/usr/bin/env bash
exec ${as[*]} "$bin/pg_ctl" -D "$data" -l "$CHAINLOCK_PG_BASE/server.log" -w -t 60 -m immediate restart >/dev/null
CRASH
  chmod 755 "$CHAINLOCK_PG_BASE/restart.sh" "$CHAINLOCK_PG_BASE/crash.sh"
  export CHAINLOCK_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
  export CHAINLOCK_PG_RESTART="$CHAINLOCK_PG_BASE/restart.sh"
  export CHAINLOCK_PG_CRASH="$CHAINLOCK_PG_BASE/crash.sh"
  export CHAINLOCK_PG_DATA="$data"
  export CHAINLOCK_PG_TLS_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=require"
  export CHAINLOCK_PG_TLS_CA="$CHAINLOCK_PG_BASE/tls/ca.crt"
  export CHAINLOCK_PG_TLS_WRONG_CA="$CHAINLOCK_PG_BASE/tls/wrong-ca.crt"
  CHAINLOCK_PG_STOP=("${as[@]}" "$bin/pg_ctl" -D "$data" -w -m immediate stop)
  echo "pg.sh: PostgreSQL $("$bin/pg_ctl" --version | awk '{print $3}') at $CHAINLOCK_PG_URL"
}

# A CA, a server certificate it signs (127.0.0.1, localhost) and a second, unrelated CA, in $1.
chainlock_pg_certificates() {
  local dir="$1"
  if ! command -v openssl >/dev/null 2>&1; then
    echo "pg.sh: installing openssl (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq openssl >/dev/null
  fi
  mkdir -p "$dir"
  (
    set -e
    cd "$dir"
    for ca in ca wrong-ca; do
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=chainlock test $ca" \
        -keyout "$ca.key" -out "$ca.crt" 2>/dev/null
    done
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.crt 2>/dev/null
    chmod 600 server.key
  ) || { echo "pg.sh: could not make the TLS certificates" >&2; return 1; }
}

chainlock_pg_bindir() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"
    return
  fi
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
  [[ -n "$dir" && -x "$dir/initdb" ]] && echo "$dir"
  return 0
}

chainlock_pg_stop() {
  if [[ -n "${CHAINLOCK_PG_BASE:-}" ]]; then
    "${CHAINLOCK_PG_STOP[@]}" >/dev/null 2>&1 || true
    rm -rf "$CHAINLOCK_PG_BASE"
    unset CHAINLOCK_PG_BASE CHAINLOCK_PG_URL CHAINLOCK_PG_RESTART CHAINLOCK_PG_CRASH CHAINLOCK_PG_DATA \
      CHAINLOCK_PG_TLS_URL CHAINLOCK_PG_TLS_CA CHAINLOCK_PG_TLS_WRONG_CA
  fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # Executed: run the given command with the cluster.
  set -euo pipefail
  trap chainlock_pg_stop EXIT
  trap 'exit 130' INT TERM
  chainlock_pg_start
  "$@"
else
  # Sourced: start now, stop when the sourcing shell exits.
  trap chainlock_pg_stop EXIT
  chainlock_pg_start
fi
