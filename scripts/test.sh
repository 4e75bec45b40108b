#!/usr/bin/env bash
# The test suite, with what it needs: `bash scripts/test.sh [cargo test args...]`.
#
# `bash scripts/test.sh --install-only` does step 1 alone (CI's lints need the C libraries).
#
# 1. Installs the Debian packages the tests use when one is missing (as root; otherwise it
#    prints the one `apt-get install` line to run and stops). Installing never starts a
#    service: the packaged PostgreSQL and MariaDB stay stopped.
# 2. Starts a throwaway PostgreSQL and a throwaway MariaDB in temporary directories, on free
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
command -v python3 >/dev/null || need python3
python3 -c 'import dkim, nacl' 2>/dev/null || [ "$(command -v python3)" != /usr/bin/python3 ] \
  || need python3-dkim python3-nacl
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

# A python3 that is not Debian's (pyenv, a venv) does not see Debian's modules: pip brings them.
if ! python3 -c 'import dkim, nacl' 2>/dev/null; then
  say "python3 ($(command -v python3)) lacks the DKIM verifier's modules: pip install dkimpy pynacl"
  python3 -m pip install --quiet --disable-pip-version-check dkimpy pynacl \
    || die "python3 -m pip install dkimpy pynacl failed"
fi

# The Amazon SES tests (tests/providers/ses.rs) run moto's SES and STS emulator
# (`python3 -m moto.server`), create its identity with boto3 and check SigV4 signatures with
# botocore (both moto's dependencies). The version the tests were written against.
if ! python3 -c 'import moto.server, boto3, botocore, flask, flask_cors' 2>/dev/null; then
  say "python3 ($(command -v python3)) lacks moto's server (the SES emulator): pip install 'moto[server]==5.2.1'"
  python3 -m pip install --quiet --disable-pip-version-check 'moto[server]==5.2.1' \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages 'moto[server]==5.2.1' \
    || die "python3 -m pip install 'moto[server]==5.2.1' failed"
fi

# The webhook signature tests (outbox-webhook/tests/signatures.rs) check Standard Webhooks
# signatures against the specification's own Python package (and PyNaCl, above, for Ed25519).
# The version the tests were written against.
if ! python3 -c 'import standardwebhooks' 2>/dev/null; then
  say "python3 ($(command -v python3)) lacks the Standard Webhooks package: pip install standardwebhooks==1.1.0"
  python3 -m pip install --quiet --disable-pip-version-check 'standardwebhooks==1.1.0' \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages 'standardwebhooks==1.1.0' \
    || die "python3 -m pip install standardwebhooks==1.1.0 failed"
fi

[ "${1:-}" = --install-only ] && exit 0

# ---------------------------------------------------------------- 2. servers
# Started by `test-servers` (tests/common/test_servers.rs, over the tests' own
# tests/common/servers.rs), in a session of its own so a Ctrl-C reaches the script, not it.
# It stops the servers when its standard input closes: at the script's exit, however it exits.
wanted=()
if [ -n "${OUTBOX_TEST_POSTGRES_URL:-}" ]; then say "PostgreSQL at $OUTBOX_TEST_POSTGRES_URL (given)"; else wanted+=(postgres); fi
if [ -n "${OUTBOX_TEST_MYSQL_URL:-}" ]; then say "MariaDB/MySQL at $OUTBOX_TEST_MYSQL_URL (given)"; else wanted+=(mariadb); fi
if [ ${#wanted[@]} -gt 0 ]; then
  cargo build --quiet -p outbox-tests --bin test-servers
  bin_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug
  coproc SERVERS { exec setsid "$bin_dir/test-servers" "${wanted[@]}"; }
  servers_pid=$SERVERS_PID
  servers_out=${SERVERS[0]}
  servers_in=${SERVERS[1]}
  stop_servers() {
    local rc=$?
    { exec {servers_in}>&-; } 2>/dev/null || true
    wait "$servers_pid" 2>/dev/null || true
    exit "$rc"
  }
  trap stop_servers EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  ready=no
  while IFS= read -r line <&"$servers_out"; do
    case $line in
      ready) ready=yes; break ;;
      OUTBOX_TEST_POSTGRES_URL=* | OUTBOX_TEST_MYSQL_URL=*)
        export "${line?}"
        say "throwaway server at ${line#*=}" ;;
    esac
  done
  [ "$ready" = yes ] || die "the throwaway servers did not start (test-servers said why above)"
fi

# ---------------------------------------------------------------- 3. the tests
cargo test --workspace --all-features "$@"
