#!/usr/bin/env bash
# The drain regression guard: the release bench at a fixed baseline commit and at HEAD,
# run alternately (base, head, base, head, …) so both see the same machine, printing the
# median drain rate of each and their ratio, per database and backlog size. A benchmark,
# not a test: run it before resolving an issue that touches the worker, the layers or the
# engine, and put its table in the issue's note.
#
#   scripts/ab-drain.sh                       # base 7f54392, 3 rounds, N = 5,000 and 50,000, all DBs
#   BASE=a6b23fe ROUNDS=5 NS="5000" BACKENDS="sqlite" scripts/ab-drain.sh
#
# Targets (issue "Speed"): head/base >= 1.0 at N = 50,000 and >= 0.95 at N = 5,000.
# Builds both in target/ab (its own target dir: deps built once, each side's crates apart).
# PostgreSQL and MariaDB: the machine's, without TLS unless OUTBOX_TEST_POSTGRES_URL /
# _MYSQL_URL say otherwise (a base built before TLS support always spoke plaintext, and TLS
# on loopback costs PostgreSQL's drain about two thirds: compare the engines, not TLS).
# SKIP_BUILD=1 reuses the binaries of the last run.
set -euo pipefail
cd "$(dirname "$0")/.."

BASE="${BASE:-7f54392}"
ROUNDS="${ROUNDS:-3}"
NS="${NS:-5000 50000}"
BACKENDS="${BACKENDS:-sqlite postgres mysql}"
AB="$(pwd)/target/ab"
export OUTBOX_TEST_POSTGRES_URL="${OUTBOX_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
export OUTBOX_TEST_MYSQL_URL="${OUTBOX_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/test?ssl-mode=DISABLED}"
export CARGO_TARGET_DIR="$AB/target"
mkdir -p "$AB"

# The bench of one checkout, copied to $AB/bench-$2. Until the bench became its own crate
# it was the example `bench` of the facade.
build() {
  local dir=$1 side=$2
  if [ -f "$dir/bench/Cargo.toml" ]; then
    (cd "$dir" && cargo build --quiet --release -p outbox-bench --bin bench)
    cp "$CARGO_TARGET_DIR/release/bench" "$AB/bench-$side"
  else
    (cd "$dir" && cargo build --quiet --release --example bench --features postgres,mysql,smtp)
    cp "$CARGO_TARGET_DIR/release/examples/bench" "$AB/bench-$side"
  fi
}

if [ -z "${SKIP_BUILD:-}" ] || [ ! -x "$AB/bench-base" ] || [ ! -x "$AB/bench-head" ]; then
  base_dir="$AB/base-src"
  rm -rf "$base_dir"
  git worktree prune
  git worktree add --detach --force "$base_dir" "$BASE" >/dev/null
  trap 'git worktree remove --force "$base_dir" >/dev/null 2>&1 || true' EXIT
  echo "building the bench at $BASE (base) and at $(git rev-parse --short HEAD) (head, with uncommitted changes)" >&2
  build "$base_dir" base
  build "$(pwd)" head
fi

results="$AB/results.tsv"
: > "$results"
for round in $(seq 1 "$ROUNDS"); do
  for n in $NS; do
    for backend in $BACKENDS; do
      for side in base head; do
        json="$AB/run.json"
        rm -f "$json"
        if ! "$AB/bench-$side" --backend "$backend" --workload drain.ours --n "$n" --runs 1 --json "$json" >/dev/null 2>"$AB/run.err"; then
          echo "the $side bench failed on $backend (N=$n):" >&2
          cat "$AB/run.err" >&2
          exit 1
        fi
        rate=$(python3 -c 'import json,sys
figs=[f for f in json.load(open(sys.argv[1])) if f["workload"]=="drain"]
print(figs[0]["value"])' "$json")
        printf '%s\t%s\t%s\t%s\t%s\n' "$backend" "$n" "$side" "$round" "$rate" >> "$results"
        printf 'round %s  %-8s N=%-6s %-4s %10.0f msg/s\n' "$round" "$backend" "$n" "$side" "$rate" >&2
      done
    done
  done
done

python3 - "$results" "$BASE" "$(git rev-parse --short HEAD)" <<'PY'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
runs = collections.defaultdict(list)
for backend, n, side, _, rate in rows:
    runs[(backend, int(n), side)].append(float(rate))
print(f"\n| drain | {sys.argv[2]} base (median, range) | {sys.argv[3]} head (median, range) | head/base | target |")
print("|---|---|---|---|---|")
for (backend, n) in sorted({(b, n) for b, n, _ in runs}, key=lambda k: (k[1], k[0])):
    b, h = runs[(backend, n, "base")], runs[(backend, n, "head")]
    mb, mh = statistics.median(b), statistics.median(h)
    target = 1.0 if n >= 50_000 else 0.95
    mark = "met" if mh / mb >= target else "MISSED"
    print(f"| {backend}, {n:,} | {mb:,.0f}/s ({min(b):,.0f}–{max(b):,.0f}) | {mh:,.0f}/s ({min(h):,.0f}–{max(h):,.0f}) | {mh/mb:.2f} | ≥ {target} {mark} |")
PY
