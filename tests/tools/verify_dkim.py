#!/usr/bin/env python3
"""An independent DKIM verifier for the tests: dkimpy (with PyNaCl for ed25519-sha256).

usage: verify_dkim.py MESSAGE_FILE RECORD_NAME RECORD_VALUE

MESSAGE_FILE is the message as the SMTP server received it; RECORD_NAME / RECORD_VALUE is
the DNS TXT record the key is published in (`s._domainkey.example.com`, `v=DKIM1; ...`), which
the lookup answers instead of DNS. Prints one JSON line: {"valid": bool, "h": [...], "a": ...}
and exits 0 when the first signature verifies, 1 when it does not, 2 on a usage error.
"""
import json
import sys

try:
    import dkim
    import nacl  # noqa: F401  (dkimpy needs it for ed25519-sha256)
except ImportError as e:
    sys.stderr.write(f"the DKIM verifier needs dkimpy and PyNaCl: pip install dkimpy pynacl ({e})\n")
    sys.exit(2)


def main():
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        sys.exit(2)
    path, name, value = sys.argv[1:]
    message = open(path, "rb").read()
    wanted = name.rstrip(".").lower()

    def lookup(qname, timeout=5):
        if isinstance(qname, bytes):
            qname = qname.decode()
        if qname.rstrip(".").lower() == wanted:
            return value.encode()
        return None

    d = dkim.DKIM(message)
    prep = d.verify_headerprep(0)
    if not prep:
        print(json.dumps({"valid": False, "h": [], "a": None, "why": "no DKIM-Signature"}))
        sys.exit(1)
    sig = prep[0]
    valid = d.verify(dnsfunc=lookup)
    h = [x.decode().strip().lower() for x in sig.get(b"h", b"").split(b":") if x.strip()]
    a = sig.get(b"a", b"").decode()
    print(json.dumps({"valid": bool(valid), "h": h, "a": a}))
    sys.exit(0 if valid else 1)


main()
