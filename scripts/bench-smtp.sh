#!/usr/bin/env bash
# SMTP throughput of outbox-smtp into postfix's smtp-sink on loopback (a benchmark, not a
# test): one connection, pools of 4/8/16, and plain lettre without TCP_NODELAY.
#
#   scripts/bench-smtp.sh [messages]        # PORT=2525 by default
#
# Installs Debian's postfix (for smtp-sink) when it is missing and stops postfix's own
# daemon; starts the sink in the background and stops it again on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${PORT:-2525}"
MESSAGES="${1:-20000}"

SINK="$(command -v smtp-sink || true)"
if [ -z "$SINK" ] && [ -x /usr/sbin/smtp-sink ]; then SINK=/usr/sbin/smtp-sink; fi
if [ -z "$SINK" ]; then
    echo "smtp-sink is missing: installing Debian's postfix" >&2
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y postfix
    postfix stop || true
    SINK=/usr/sbin/smtp-sink
fi

# Build first, so the sink is not left running through a long compile.
cargo build --release -p outbox-bench --bin smtp_bench

# -a: no SASL, -m: up to 512 sessions, backlog 1024; as root it must drop to a user.
USER_OPT=()
if [ "$(id -u)" = 0 ]; then USER_OPT=(-u postfix); fi
"$SINK" "${USER_OPT[@]}" -a -m 512 "127.0.0.1:${PORT}" 1024 &
SINK_PID=$!
trap 'kill "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true' EXIT

up=no
for _ in $(seq 1 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${PORT}") 2>/dev/null; then up=yes; break; fi
    sleep 0.1
done
if [ "$up" != yes ]; then
    echo "smtp-sink did not start on 127.0.0.1:${PORT}" >&2
    exit 1
fi

"${CARGO_TARGET_DIR:-target}/release/smtp_bench" "127.0.0.1:${PORT}" "$MESSAGES"
