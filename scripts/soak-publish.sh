#!/usr/bin/env bash
# The publish cases at the sizes the outbox promises (100,000 events relayed and consumed
# through the inbox; the relay SIGKILLed ten times over 20,000; a private broker restarted
# over 10,000; 1,000 keys × 50 in two relay processes), on SQLite, PostgreSQL and MariaDB.
# `cargo test` (and CI) runs the same cases with a tenth of the events. Through NATS
# (1,000 keys × 20 then) the three databases took 11 minutes on two cores; RabbitMQ's
# run is not timed yet. Needs the servers `scripts/test.sh` needs plus NATS (-js) on 127.0.0.1:4222
# and RabbitMQ on 127.0.0.1:5672. Arguments replace the filter `publish::` (e.g.
# `sqlite::publish::`, `rabbitmq`).
set -euo pipefail
cd "$(dirname "$0")/.."
export OUTBOX_TEST_POSTGRES_URL="${OUTBOX_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
export OUTBOX_TEST_MYSQL_URL="${OUTBOX_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
export OUTBOX_PUBLISH_FULL=1
[ $# -gt 0 ] || set -- publish::
cargo test -p outbox-tests --all-features --test conformance -- "$@" \
  --nocapture --test-threads=1
