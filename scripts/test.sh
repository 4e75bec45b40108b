#!/usr/bin/env bash
# The test suite, with what it needs: `bash scripts/test.sh [cargo test args...]`.
#
# `bash scripts/test.sh --install-only` does step 1 alone (CI's lints need the C libraries).
#
# 1. Installs the Debian packages the tests use when one is missing (as root; otherwise it
#    prints the one `apt-get install` line to run and stops). Installing never starts a
#    service: the packaged PostgreSQL and MariaDB stay stopped.
# 2. Starts a throwaway PostgreSQL and a throwaway MariaDB in a temporary directory, on free
#    loopback ports, for this run only, and stops them (and removes their data) when the run
#    ends, however it ends. A server given by URL is used instead and left alone:
#      OUTBOX_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test
#      OUTBOX_TEST_MYSQL_URL=mysql://root@127.0.0.1:3306/test
# 3. Runs `cargo test --workspace --all-features` with those URLs (extra arguments are passed
#    on, e.g. `bash scripts/test.sh --test conformance -- postgres`).
#
# Nothing is skipped: a piece that cannot be set up stops the run with one line naming it.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "scripts/test.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# ---------------------------------------------------------------- 1. packages
missing=()
need() { missing+=("$@"); }
command -v cc >/dev/null || need gcc libc6-dev
command -v pkg-config >/dev/null || need pkg-config
pkg-config --exists libpq 2>/dev/null || need libpq-dev
{ pkg-config --exists mysqlclient 2>/dev/null || pkg-config --exists libmariadb 2>/dev/null; } \
  || need libmariadb-dev libmariadb-dev-compat
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "${OUTBOX_TEST_PG_BINDIR:-}" ] || need postgresql
command -v mariadb-install-db >/dev/null || command -v mysql_install_db >/dev/null || need mariadb-server
command -v mariadb >/dev/null || command -v mysql >/dev/null || need mariadb-client
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || need faketime
command -v curl >/dev/null || need curl
command -v dnsmasq >/dev/null || need dnsmasq-base
command -v openssl >/dev/null || need openssl
python3 -c 'import dkim, nacl' 2>/dev/null || need python3 python3-dkim python3-nacl
command -v chromium >/dev/null || need chromium
command -v chromedriver >/dev/null || need chromium-driver

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    die "missing packages; install them with: sudo apt-get install -y ${missing[*]}"
  fi
  say "installing ${missing[*]}"
  # No service may start from a package's install script: the run's servers are its own.
  policy=/usr/sbin/policy-rc.d
  placed_policy=no
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && placed_policy=yes
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || { [ "$placed_policy" = yes ] && rm -f "$policy"; die "apt-get install ${missing[*]} failed"; }
  [ "$placed_policy" = yes ] && rm -f "$policy"
fi

[ "${1:-}" = --install-only ] && exit 0

# ---------------------------------------------------------------- 2. servers
run_dir=$(mktemp -d /tmp/outbox-test-servers.XXXXXX)
pg_pid=""
my_pid=""
stop_servers() {
  local rc=$?
  if [ -n "$pg_pid" ] && kill -0 "$pg_pid" 2>/dev/null; then
    kill -INT "$pg_pid" 2>/dev/null || true # fast shutdown
  fi
  if [ -n "$my_pid" ] && kill -0 "$my_pid" 2>/dev/null; then
    kill -TERM "$my_pid" 2>/dev/null || true
  fi
  for pid in $pg_pid $my_pid; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$run_dir"
  exit "$rc"
}
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() { # what, pid, log, command...
  local what=$1 pid=$2 log=$3
  shift 3
  for _ in $(seq 1 900); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "$what exited while starting (log above)"; }
    sleep 0.1
  done
  cat "$log" >&2
  die "$what did not become ready in 90 s (log above)"
}

if [ -z "${OUTBOX_TEST_POSTGRES_URL:-}" ]; then
  bindir=${OUTBOX_TEST_PG_BINDIR:-$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")}
  pg_dir="$run_dir/postgres"
  mkdir -p "$pg_dir"
  as_pg=()
  if [ "$(id -u)" = 0 ]; then # PostgreSQL refuses to run as root
    id postgres >/dev/null 2>&1 || die "no user postgres to run PostgreSQL as (apt-get install -y postgresql creates it)"
    chown postgres: "$run_dir" "$pg_dir"
    chmod 755 "$run_dir"
    as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups)
  fi
  "${as_pg[@]}" env LC_ALL=C "$bindir/initdb" -D "$pg_dir/data" -U postgres --auth=trust -E UTF8 --no-sync \
    > "$pg_dir/initdb.log" 2>&1 || { cat "$pg_dir/initdb.log" >&2; die "initdb failed (log above)"; }
  pg_port=$(free_port)
  "${as_pg[@]}" "$bindir/postgres" -D "$pg_dir/data" -p "$pg_port" -k "$pg_dir" \
    -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 \
    > "$pg_dir/server.log" 2>&1 &
  pg_pid=$!
  wait_for "PostgreSQL" "$pg_pid" "$pg_dir/server.log" "$bindir/pg_isready" -q -U postgres -h "$pg_dir" -p "$pg_port"
  "$bindir/createdb" -U postgres -h "$pg_dir" -p "$pg_port" test
  export OUTBOX_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/test"
  say "throwaway PostgreSQL at $OUTBOX_TEST_POSTGRES_URL"
else
  say "PostgreSQL at $OUTBOX_TEST_POSTGRES_URL (given)"
fi

if [ -z "${OUTBOX_TEST_MYSQL_URL:-}" ]; then
  install_db=$(command -v mariadb-install-db || command -v mysql_install_db)
  mariadbd=$(command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd /usr/sbin/mysqld 2>/dev/null | head -1)
  [ -n "$mariadbd" ] || die "mariadbd not found: apt-get install -y mariadb-server"
  admin=$(command -v mariadb-admin || command -v mysqladmin)
  client=$(command -v mariadb || command -v mysql)
  my_dir="$run_dir/mariadb"
  mkdir -p "$my_dir/tmp"
  as_root=()
  [ "$(id -u)" = 0 ] && as_root=(--user=root)
  "$install_db" --no-defaults --datadir="$my_dir/data" --tmpdir="$my_dir/tmp" \
    --auth-root-authentication-method=normal --skip-test-db "${as_root[@]}" \
    > "$my_dir/install.log" 2>&1 || { cat "$my_dir/install.log" >&2; die "mariadb-install-db failed (log above)"; }
  my_port=$(free_port)
  # The packaged server's character set (Debian's configuration says utf8mb4).
  "$mariadbd" --no-defaults --datadir="$my_dir/data" --tmpdir="$my_dir/tmp" \
    --socket="$my_dir/sock" --pid-file="$my_dir/pid" --port="$my_port" \
    --bind-address=127.0.0.1 --skip-name-resolve --innodb-flush-log-at-trx-commit=0 \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci --max-connections=300 \
    "${as_root[@]}" > "$my_dir/server.log" 2>&1 &
  my_pid=$!
  wait_for "MariaDB" "$my_pid" "$my_dir/server.log" "$admin" --no-defaults --socket="$my_dir/sock" -uroot ping
  "$client" --no-defaults --socket="$my_dir/sock" -uroot -e 'CREATE DATABASE test'
  export OUTBOX_TEST_MYSQL_URL="mysql://root@127.0.0.1:$my_port/test"
  say "throwaway MariaDB at $OUTBOX_TEST_MYSQL_URL"
else
  say "MariaDB/MySQL at $OUTBOX_TEST_MYSQL_URL (given)"
fi

# ---------------------------------------------------------------- 3. the tests
cargo test --workspace --all-features "$@"
