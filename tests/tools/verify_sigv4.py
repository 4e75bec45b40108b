#!/usr/bin/env python3
"""An independent AWS Signature Version 4 check for the tests: botocore's own signer.

usage: verify_sigv4.py REQUEST_FILE

REQUEST_FILE is JSON: {"method": "POST", "url": "http://127.0.0.1:PORT/path",
"headers": [[name, value], ...] (as received, Authorization included), "body_base64": "...",
"secret_access_key": "...", "session_token": "..." or null}. The request is signed again by
botocore's SigV4Auth with the region, service, access key id and signed headers its
Authorization names, at its X-Amz-Date; prints one JSON line {"valid": bool,
"access_key_id", "region", "service", "signed_headers", "signature", "expected",
"canonical_request"} and exits 0 when the signatures agree, 1 when they do not, 2 on a
usage error. botocore comes with moto (pip install 'moto[server]').
"""
import base64
import json
import sys

try:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as e:
    sys.stderr.write(f"the SigV4 check needs botocore: pip install 'moto[server]' ({e})\n")
    sys.exit(2)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    with open(sys.argv[1], "rb") as f:
        req = json.load(f)
    headers = {}
    for name, value in req["headers"]:
        headers.setdefault(name.lower(), value)
    algorithm, _, rest = headers["authorization"].partition(" ")
    parts = dict(p.strip().split("=", 1) for p in rest.split(","))
    access_key_id, _date, region, service, _terminator = parts["Credential"].split("/")
    signed = parts["SignedHeaders"].split(";")
    body = base64.b64decode(req["body_base64"])
    # Only the headers the request says it signed; botocore adds `host` from the URL.
    request = AWSRequest(
        method=req["method"],
        url=req["url"],
        data=body,
        headers={name: headers[name] for name in signed if name != "host"},
    )
    token = req.get("session_token")
    signer = SigV4Auth(Credentials(access_key_id, req["secret_access_key"], token), service, region)
    request.context["timestamp"] = headers["x-amz-date"]
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    valid = (
        algorithm == "AWS4-HMAC-SHA256"
        and expected == parts["Signature"]
        and sorted(signer.headers_to_sign(request)) == sorted(signed)
        and (token is None or headers.get("x-amz-security-token") == token)
    )
    print(json.dumps({
        "valid": valid,
        "access_key_id": access_key_id,
        "region": region,
        "service": service,
        "signed_headers": signed,
        "signature": parts["Signature"],
        "expected": expected,
        "canonical_request": canonical,
    }))
    sys.exit(0 if valid else 1)


main()
