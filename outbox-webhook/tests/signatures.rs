//! Standard Webhooks signatures against independent implementations: deliveries signed here
//! verified by the official Python package `standardwebhooks` (HMAC, `v1`) and by PyNaCl
//! (Ed25519, `v1a`), and their signatures verified here; and, with the feature `axum`, the
//! `VerifiedWebhook` extractor on a real server.
//!
//! Needs `python3` with `pip install standardwebhooks==1.1.0 pynacl` (scripts/test.sh installs
//! them); without them the tests fail, they do not skip.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use outbox_webhook::signature::{SignatureHeaders, Signer, SigningKey, VerifyingKey, WebhookId};
use outbox_webhook::verify::{Verifier, VerifyError};
use serde_json::{json, Value};

/// The Python side. Mode `verify` reads a delivery and one key from standard input and exits 0
/// only when the delivery verifies: a `whsec_` key with the `standardwebhooks` package's own
/// `Webhook.verify` (timestamp tolerance included), a `whpk_` key with PyNaCl over
/// `{id}.{timestamp}.{body}` and the header's `v1a` entries. Mode `sign` makes an HMAC secret
/// and an Ed25519 key pair of its own and signs the given id and body with both. Exit code 2:
/// a module is missing.
const PYTHON: &str = r#"
import base64, json, os, sys, time
try:
    from standardwebhooks.webhooks import Webhook
    from nacl.signing import SigningKey, VerifyKey
    from nacl.exceptions import BadSignatureError
except ImportError as e:
    print(f"missing python module: {e}", file=sys.stderr)
    sys.exit(2)

mode = sys.argv[1]
req = json.load(sys.stdin)
b64 = lambda b: base64.b64encode(b).decode()

if mode == "verify":
    body = base64.b64decode(req["body"])
    key = req["key"]
    if key.startswith("whsec_"):
        headers = {"webhook-id": req["id"], "webhook-timestamp": req["timestamp"],
                   "webhook-signature": req["signature"]}
        try:
            Webhook(key).verify(body, headers, json_parse=False)
        except Exception as e:
            print(f"standardwebhooks refused: {e!r}", file=sys.stderr)
            sys.exit(1)
    elif key.startswith("whpk_"):
        if abs(time.time() - int(req["timestamp"])) > 300:
            print("timestamp out of tolerance", file=sys.stderr)
            sys.exit(1)
        verify_key = VerifyKey(base64.b64decode(key[len("whpk_"):]))
        content = f'{req["id"]}.{req["timestamp"]}.'.encode() + body
        for entry in req["signature"].split(" "):
            version, _, signature = entry.partition(",")
            if version != "v1a":
                continue
            try:
                verify_key.verify(content, base64.b64decode(signature))
                sys.exit(0)
            except BadSignatureError:
                pass
        print("PyNaCl: no v1a signature verifies", file=sys.stderr)
        sys.exit(1)
    else:
        print(f"unknown key kind", file=sys.stderr)
        sys.exit(3)
    sys.exit(0)

if mode == "sign":
    from datetime import datetime, timezone
    msg_id, body = req["id"], req["body"]
    timestamp = int(time.time())
    secret = "whsec_" + b64(os.urandom(32))
    hmac_signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(timestamp, tz=timezone.utc), body)
    signing_key = SigningKey.generate()
    signed = signing_key.sign(f"{msg_id}.{timestamp}.{body}".encode())
    print(json.dumps({
        "timestamp": str(timestamp),
        "hmac_secret": secret,
        "hmac_signature": hmac_signature,
        "ed_public": "whpk_" + b64(bytes(signing_key.verify_key)),
        "ed_seed": "whsk_" + b64(bytes(signing_key)),
        "ed_libsodium": "whsk_" + b64(signing_key._signing_key),
        "ed_signature": "v1a," + b64(signed.signature),
    }))
    sys.exit(0)
"#;

/// Runs the Python side; its exit code, and what it printed.
fn python(mode: &str, input: Value) -> (i32, String, String) {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run python3 ({e}): these tests need python3 with \
                 `pip install standardwebhooks==1.1.0 pynacl`"
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code != 2,
        "python3 lacks a module ({}): pip install standardwebhooks==1.1.0 pynacl",
        stderr.trim()
    );
    assert!(
        code == 0 || code == 1,
        "the python side failed ({code}): {stderr}"
    );
    (code, stdout, stderr)
}

/// Whether Python verifies `headers` and `body` with `key` alone.
fn python_verifies(headers: &SignatureHeaders, body: &[u8], key: &VerifyingKey) -> bool {
    let (code, _, stderr) = python(
        "verify",
        json!({
            "id": headers.id,
            "timestamp": headers.timestamp,
            "signature": headers.signature,
            "body": STANDARD.encode(body),
            "key": key.to_key_string(),
        }),
    );
    if code != 0 {
        eprintln!("python: {}", stderr.trim());
    }
    code == 0
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

const BODY: &[u8] =
    br#"{"type":"invoice.paid","data":{"id":"inv_1","amount":4200,"note":"caf\u00e9 \u2713"}}"#;

fn signed(keys: &[&SigningKey], id: &str, body: &[u8]) -> SignatureHeaders {
    let signer = Signer::new(keys.iter().map(|k| (*k).clone()).collect()).unwrap();
    signer.headers(&WebhookId::new(id).unwrap(), now_secs(), body)
}

#[test]
fn python_standardwebhooks_verifies_our_hmac_signatures() {
    let key = SigningKey::generate_hmac();
    let headers = signed(&[&key], "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", BODY);
    assert!(headers.signature.starts_with("v1,"));
    assert!(python_verifies(&headers, BODY, &key.verifying_key()));

    // A key read back from its stored form signs the same.
    let stored = SigningKey::parse(&key.to_secret_string()).unwrap();
    let again = signed(&[&stored], "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", BODY);
    assert!(python_verifies(&again, BODY, &key.verifying_key()));

    // Negative controls: a tampered body, another id, another key.
    let tampered =
        br#"{"type":"invoice.paid","data":{"id":"inv_1","amount":4201,"note":"caf\u00e9 \u2713"}}"#;
    assert!(!python_verifies(&headers, tampered, &key.verifying_key()));
    let other_id = SignatureHeaders {
        id: "msg_other".into(),
        ..headers.clone()
    };
    assert!(!python_verifies(&other_id, BODY, &key.verifying_key()));
    let unrelated = SigningKey::generate_hmac().verifying_key();
    assert!(!python_verifies(&headers, BODY, &unrelated));
}

#[test]
fn pynacl_verifies_our_ed25519_signatures() {
    let key = SigningKey::generate_ed25519();
    let headers = signed(&[&key], "msg_ed", BODY);
    assert!(headers.signature.starts_with("v1a,"));
    let public = key.verifying_key();
    assert!(public.to_key_string().starts_with("whpk_"));
    assert!(python_verifies(&headers, BODY, &public));

    let stored = SigningKey::parse(&key.to_secret_string()).unwrap();
    assert!(python_verifies(
        &signed(&[&stored], "msg_ed", BODY),
        BODY,
        &public
    ));

    assert!(!python_verifies(&headers, b"{}", &public));
    let unrelated = SigningKey::generate_ed25519().verifying_key();
    assert!(!python_verifies(&headers, BODY, &unrelated));
}

#[test]
fn during_a_rotation_python_verifies_with_the_old_key_alone_or_the_new_key_alone() {
    let old = SigningKey::generate_hmac();
    let new = SigningKey::generate_hmac();

    // Two HMAC signatures, newest first.
    let headers = signed(&[&new, &old], "msg_rotation", BODY);
    assert_eq!(headers.signature.split(' ').count(), 2);
    assert!(python_verifies(&headers, BODY, &old.verifying_key()));
    assert!(python_verifies(&headers, BODY, &new.verifying_key()));
    assert!(!python_verifies(
        &headers,
        BODY,
        &SigningKey::generate_hmac().verifying_key()
    ));
    assert!(!python_verifies(
        &headers,
        b"tampered",
        &old.verifying_key()
    ));

    // Moving from HMAC to Ed25519: three signatures; each scheme's verifier finds its own.
    let ed = SigningKey::generate_ed25519();
    let three = signed(&[&ed, &new, &old], "msg_rotation", BODY);
    assert_eq!(three.signature.split(' ').count(), 3);
    assert!(three.signature.starts_with("v1a,"));
    assert!(python_verifies(&three, BODY, &old.verifying_key()));
    assert!(python_verifies(&three, BODY, &new.verifying_key()));
    assert!(python_verifies(&three, BODY, &ed.verifying_key()));
    assert!(!python_verifies(&three, b"tampered", &ed.verifying_key()));

    // And the Rust verifier agrees, with any one of the three keys.
    for key in [&old, &new, &ed] {
        Verifier::new(vec![key.verifying_key()])
            .unwrap()
            .verify_now(&three.id, &three.timestamp, &three.signature, BODY)
            .unwrap();
    }
}

#[test]
fn we_verify_signatures_made_by_python_standardwebhooks_and_pynacl() {
    let id = "msg_from_python";
    let body = r#"{"type":"user.created","data":{"name":"Zoë"}}"#;
    let (code, stdout, stderr) = python("sign", json!({ "id": id, "body": body }));
    assert_eq!(code, 0, "{stderr}");
    let made: Value = serde_json::from_str(&stdout).unwrap();
    let field = |name: &str| made[name].as_str().unwrap().to_owned();
    let timestamp = field("timestamp");
    let hmac_signature = field("hmac_signature");
    let ed_signature = field("ed_signature");
    assert!(hmac_signature.starts_with("v1,"));
    assert!(ed_signature.starts_with("v1a,"));

    let hmac = Verifier::new(vec![VerifyingKey::parse(&field("hmac_secret")).unwrap()]).unwrap();
    hmac.verify_now(id, &timestamp, &hmac_signature, body.as_bytes())
        .unwrap();
    let ed = Verifier::new(vec![VerifyingKey::parse(&field("ed_public")).unwrap()]).unwrap();
    ed.verify_now(id, &timestamp, &ed_signature, body.as_bytes())
        .unwrap();

    // One header with both, and an entry of a version nobody knows: both verifiers accept.
    let header = format!("v2,c29tZXRoaW5nIGVsc2U= {hmac_signature} {ed_signature}");
    hmac.verify_now(id, &timestamp, &header, body.as_bytes())
        .unwrap();
    ed.verify_now(id, &timestamp, &header, body.as_bytes())
        .unwrap();
    // A verifier with both keys, too; and neither accepts another body.
    let both = Verifier::new(vec![
        VerifyingKey::parse(&field("ed_public")).unwrap(),
        VerifyingKey::parse(&field("hmac_secret")).unwrap(),
    ])
    .unwrap();
    both.verify_now(id, &timestamp, &hmac_signature, body.as_bytes())
        .unwrap();
    both.verify_now(id, &timestamp, &ed_signature, body.as_bytes())
        .unwrap();
    assert_eq!(
        both.verify_now(id, &timestamp, &header, b"{}"),
        Err(VerifyError::NoMatchingSignature)
    );

    // PyNaCl's key as a `whsk_`: the 32-byte seed and libsodium's 64-byte secret key (seed and
    // public key) are the same key here, sign exactly as PyNaCl did (Ed25519 is
    // deterministic), and the 64-byte form is what this crate writes.
    let from_seed = SigningKey::parse(&field("ed_seed")).unwrap();
    let from_libsodium = SigningKey::parse(&field("ed_libsodium")).unwrap();
    let webhook_id = WebhookId::new(id).unwrap();
    let ts: u64 = timestamp.parse().unwrap();
    assert_eq!(
        from_seed.sign(&webhook_id, ts, body.as_bytes()),
        ed_signature
    );
    assert_eq!(
        from_libsodium.sign(&webhook_id, ts, body.as_bytes()),
        ed_signature
    );
    assert_eq!(from_seed.to_secret_string(), field("ed_libsodium"));
    assert_eq!(
        from_seed.verifying_key().to_key_string(),
        field("ed_public")
    );
    // And the HMAC secret Python made signs here as it did there.
    let python_secret = SigningKey::parse(&field("hmac_secret")).unwrap();
    assert_eq!(
        python_secret.sign(&webhook_id, ts, body.as_bytes()),
        hmac_signature
    );
}

#[cfg(feature = "axum")]
mod extractor {
    use std::sync::Arc;

    use axum::extract::State;
    use axum::routing::post;
    use axum::Router;
    use outbox_webhook::signature::{SignatureHeaders, Signer, SigningKey, WebhookId};
    use outbox_webhook::verify::{MemoryReplayGuard, VerifiedWebhook, Verifier};
    use serde_json::Value;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// An application state that holds the verifier among other things.
    #[derive(Clone)]
    struct App {
        verifier: Arc<Verifier>,
        name: &'static str,
    }

    impl axum::extract::FromRef<App> for Arc<Verifier> {
        fn from_ref(app: &App) -> Arc<Verifier> {
            app.verifier.clone()
        }
    }

    async fn handler(State(app): State<App>, hook: VerifiedWebhook) -> String {
        let event: Value = hook.json().unwrap();
        format!(
            "{} got {} at {}: {}",
            app.name, hook.id, hook.timestamp, event["type"]
        )
    }

    async fn serve(verifier: Verifier) -> std::net::SocketAddr {
        let app = Router::new().route("/hook", post(handler)).with_state(App {
            verifier: Arc::new(verifier),
            name: "receiver",
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        addr
    }

    /// A hand-written HTTP/1.1 POST; the status and the body of the response.
    async fn post_to(
        addr: std::net::SocketAddr,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> (u16, String) {
        let mut request = format!(
            "POST /hook HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let response = String::from_utf8(response).unwrap();
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    fn pairs(headers: SignatureHeaders) -> Vec<(&'static str, String)> {
        headers.into_pairs().to_vec()
    }

    #[tokio::test]
    async fn the_extractor_accepts_a_good_delivery_and_refuses_forgeries_and_replays() {
        let key = SigningKey::generate_ed25519();
        let signer = Signer::new(vec![key.clone()]).unwrap();
        let verifier = Verifier::new(vec![key.verifying_key()])
            .unwrap()
            .max_body(4096)
            .with_replay_guard(MemoryReplayGuard::new());
        let addr = serve(verifier).await;
        let body = br#"{"type":"invoice.paid"}"#;
        let now = super::now_secs();
        let good = signer.headers(&WebhookId::new("msg_1").unwrap(), now, body);

        let (status, text) = post_to(addr, &pairs(good.clone()), body).await;
        assert_eq!(status, 200, "{text}");
        assert_eq!(
            text,
            format!("receiver got msg_1 at {now}: \"invoice.paid\"")
        );

        // The same request again: a replay.
        let (status, text) = post_to(addr, &pairs(good.clone()), body).await;
        assert_eq!(status, 401, "{text}");
        assert!(text.contains("already received"), "{text}");

        // A bad signature: the body altered in transit.
        let forged = signer.headers(&WebhookId::new("msg_2").unwrap(), now, body);
        let (status, text) =
            post_to(addr, &pairs(forged.clone()), br#"{"type":"invoice.void"}"#).await;
        assert_eq!(status, 401, "{text}");
        assert!(text.contains("no signature matches"), "{text}");
        // Signed by a key the receiver does not have.
        let stranger = Signer::new(vec![SigningKey::generate_ed25519()]).unwrap();
        let (status, _) = post_to(
            addr,
            &pairs(stranger.headers(&WebhookId::new("msg_3").unwrap(), now, body)),
            body,
        )
        .await;
        assert_eq!(status, 401);
        // The genuine msg_2 is still accepted: failed attempts do not reach the replay guard.
        let (status, text) = post_to(addr, &pairs(forged), body).await;
        assert_eq!(status, 200, "{text}");

        // Too old.
        let stale = signer.headers(&WebhookId::new("msg_4").unwrap(), now - 600, body);
        let (status, text) = post_to(addr, &pairs(stale), body).await;
        assert_eq!(status, 401, "{text}");
        assert!(text.contains("in the past"), "{text}");

        // Missing and malformed headers: 400.
        let mut missing = pairs(signer.headers(&WebhookId::new("msg_5").unwrap(), now, body));
        missing.remove(2);
        let (status, text) = post_to(addr, &missing, body).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("webhook-signature"), "{text}");
        let mut malformed = pairs(signer.headers(&WebhookId::new("msg_5").unwrap(), now, body));
        malformed[1].1 = "yesterday".into();
        let (status, _) = post_to(addr, &malformed, body).await;
        assert_eq!(status, 400);

        // Over the body limit: 413, before any verification.
        let big = vec![b'x'; 5000];
        let (status, text) = post_to(
            addr,
            &pairs(signer.headers(&WebhookId::new("msg_6").unwrap(), now, &big)),
            &big,
        )
        .await;
        assert_eq!(status, 413, "{text}");
    }
}
