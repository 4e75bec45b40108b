"""A webhook receiver for the tests, verifying every delivery with implementations nobody
in this repository wrote: Standard Webhooks' official Python package (`standardwebhooks`,
HMAC-SHA256 `v1`) and PyNaCl for Ed25519 (`v1a`, the specification's asymmetric scheme,
which that package does not implement).

Usage: python3 webhook_receiver.py CONFIG.json
CONFIG: {"keys": {"/path": ["whsec_..." | "whpk_...", ...]}}: the keys the receiver at each
path knows (any one verifying is enough, as during a rotation).

Prints its port on the first line of stdout, then one JSON line per delivery:
{"path", "id", "timestamp", "verified": bool, "why", "body"}. Answers 204 when verified,
401 when not. Stops when stdin closes.
"""
import base64
import http.server
import json
import sys
import threading
import time

import nacl.exceptions
import nacl.signing
import standardwebhooks

config = json.load(open(sys.argv[1]))
lock = threading.Lock()


def verify(keys, headers, body):
    """Why the delivery does not verify with any of `keys`, or None."""
    why = []
    for key in keys:
        if key.startswith("whsec_"):
            try:
                standardwebhooks.Webhook(key).verify(body, headers)
                return None
            except Exception as e:  # the package's own verdict
                why.append(f"whsec: {e}")
        elif key.startswith("whpk_"):
            public = nacl.signing.VerifyKey(base64.b64decode(key[len("whpk_"):]))
            ts = int(headers["webhook-timestamp"])
            if abs(time.time() - ts) > 300:
                why.append("whpk: timestamp outside 5 minutes")
                continue
            signed = f'{headers["webhook-id"]}.{headers["webhook-timestamp"]}.'.encode() + body
            for part in headers["webhook-signature"].split(" "):
                version, _, sig = part.partition(",")
                if version != "v1a":
                    continue
                try:
                    public.verify(signed, base64.b64decode(sig))
                    return None
                except nacl.exceptions.BadSignatureError:
                    pass
            why.append("whpk: no v1a signature verifies")
    return "; ".join(why) or "no key"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        keys = config["keys"].get(self.path, [])
        why = verify(keys, headers, body) if headers.get("webhook-signature") else "unsigned"
        record = {
            "path": self.path,
            "id": headers.get("webhook-id"),
            "timestamp": headers.get("webhook-timestamp"),
            "verified": why is None,
            "why": why,
            "body": body.decode("utf-8", "replace"),
        }
        with lock:
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()
        self.send_response(204 if why is None else 401)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
