#!/usr/bin/env bash
# Runs a command against a private moto SES emulator on loopback (moto from PyPI, which
# scripts/test.sh --install-only installs): starts `python3 -m moto.server` on a free port,
# verifies the domain shop.example there, runs the command with MOTO_PORT set, then checks
# through moto's own data that the emulator holds as many sent emails as EXPECT_SENT (if
# set), and stops the server. Usage: EXPECT_SENT=200 scripts/moto-ses.sh COMMAND [ARGS...]
set -euo pipefail
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
python3 -m moto.server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null || true; wait $moto 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/moto-api/data.json" -o /dev/null 2>/dev/null && break
  kill -0 $moto 2>/dev/null || { cat "$log" >&2; echo "moto's server exited" >&2; exit 1; }
  sleep 0.5
done
python3 - "$port" <<'PY'
import sys, boto3
boto3.client("sesv2", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{sys.argv[1]}",
             aws_access_key_id="AKIAMOTOSETUP", aws_secret_access_key="setup") \
    .create_email_identity(EmailIdentity="shop.example")
PY
MOTO_PORT=$port "$@"
if [ -n "${EXPECT_SENT:-}" ]; then
  python3 - "$port" "$EXPECT_SENT" <<'PY'
import json, sys, urllib.request
data = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/moto-api/data.json"))
# moto keeps the raw emails SES took under ses -> RawMessage.
n = len(data.get("ses", {}).get("RawMessage") or [])
want = int(sys.argv[2])
print(f"moto's SES holds {n} sent emails (expected {want})")
sys.exit(0 if n == want else 1)
PY
fi
