#!/usr/bin/env bash
# The full benchmark: every workload on every backend, medians of RUNS runs,
# printed as tables and written to bench-results.json. A benchmark, not a test.
#
#   scripts/bench.sh                         # all backends, all workloads, 3 runs
#   RUNS=1 BACKENDS="sqlite" scripts/bench.sh --workload drain
#
# Installs Debian's postfix for smtp-sink when missing (the `email` workload), stops
# postfix's own daemon, starts the sink on 127.0.0.1:2525 and stops it on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
BACKENDS="${BACKENDS:-sqlite postgres mysql}"
PORT="${PORT:-2525}"

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
cargo build --release -p outbox-bench --bin bench

USER_OPT=()
if [ "$(id -u)" = 0 ]; then USER_OPT=(-u postfix); fi
"$SINK" "${USER_OPT[@]}" -a -m 512 "127.0.0.1:${PORT}" 1024 &
SINK_PID=$!
trap 'kill "$SINK_PID" 2>/dev/null || true; wait "$SINK_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${PORT}") 2>/dev/null; then break; fi
    sleep 0.1
done

args=()
for b in $BACKENDS; do args+=(--backend "$b"); done
OUTBOX_BENCH_SMTP="127.0.0.1:${PORT}" OUTBOX_BENCH_SINK_PID="$SINK_PID" "${CARGO_TARGET_DIR:-target}/release/bench" "${args[@]}" --runs "$RUNS" \
    --json bench-results.json "$@"
