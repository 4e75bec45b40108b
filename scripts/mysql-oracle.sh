#!/usr/bin/env bash
# Runs the MySQL conformance suite against Oracle MySQL (not MariaDB).
#
# Debian bookworm ships only MariaDB; Oracle MySQL is packaged in Debian unstable (sid),
# whose libc is newer than bookworm's. So this script builds a minimal sid root with
# debootstrap (once, in $ROOT), starts that mysqld on 127.0.0.1:$PORT inside it, and runs
# `tests/conformance` for the `mysql` backend with OUTBOX_TEST_MYSQL_URL pointing at it.
# Needs root (debootstrap, chroot, mount) and Debian's package mirror.
#
#   scripts/mysql-oracle.sh            # set up if needed, start, test, stop
#   KEEP=1 scripts/mysql-oracle.sh     # leave the server running afterwards
set -euo pipefail

ROOT=${ROOT:-/srv/mysql-sid}
PORT=${PORT:-3307}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
cd "$(dirname "$0")/.."

if [ ! -x "$ROOT/usr/sbin/mysqld" ]; then
    command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }
    mkdir -p "$ROOT"
    debootstrap --variant=minbase --include=mysql-server-core,mysql-client-core sid "$ROOT" "$MIRROR"
fi
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
chroot "$ROOT" /usr/sbin/mysqld --version

if [ ! -d "$ROOT/var/lib/mysql-outbox/mysql" ]; then
    mkdir -p "$ROOT/var/lib/mysql-outbox"
    chroot "$ROOT" /usr/sbin/mysqld --initialize-insecure --user=root --datadir=/var/lib/mysql-outbox
fi
mkdir -p "$ROOT/run/mysqld"

started=0
if ! mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'select 1' >/dev/null 2>&1; then
    chroot "$ROOT" /usr/sbin/mysqld --user=root --datadir=/var/lib/mysql-outbox \
        --port="$PORT" --bind-address=127.0.0.1 --socket=/run/mysqld/outbox.sock \
        --mysqlx=OFF --secure-file-priv= >/tmp/mysql-oracle.log 2>&1 &
    started=1
    for _ in $(seq 60); do
        mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'select 1' >/dev/null 2>&1 && break
        sleep 1
    done
fi
stop() {
    if [ "$started" = 1 ] && [ -z "${KEEP:-}" ]; then
        mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'shutdown' || true
    fi
}
trap stop EXIT

mariadb -h127.0.0.1 -P"$PORT" -uroot -N -e 'select concat("server: ", version(), ", collation ", @@collation_server); create database if not exists test'
OUTBOX_TEST_MYSQL_URL="mysql://root@127.0.0.1:$PORT/test" \
    cargo test --all-features --test conformance mysql
