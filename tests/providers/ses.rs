//! The Amazon SES transport (feature `providers`) end to end.
//!
//! Against an SES emulator nobody here wrote: moto in server mode (`python3 -m
//! moto.server`, one per test on a free loopback port, killed at the end), which
//! implements SES v2 `SendEmail` with `Raw` content (moto/sesv2/responses.py: the base64
//! `Content.Raw.Data` decoded, every `Destination` address plus those of the message's
//! To, Cc and Bcc headers; a sender whose address or domain is not a verified identity is
//! refused with `MessageRejected`) and keeps each message it took, raw, readable at
//! `GET /moto-api/data.json` (`ses.RawMessage`: `id`, `destinations`, `raw_data`). The
//! identity is created with boto3 (signed by botocore). Emails are enqueued on a real
//! SQLite file and delivered by the outbox; the raw MIME moto stored must parse and carry
//! our DKIM signature, verified by dkimpy (`tools/verify_dkim.py`).
//!
//! The credential chain against loopback stand-ins that follow AWS's documented formats
//! (IMDSv2: `PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds`, then the
//! role's name and its JSON credentials under `/latest/meta-data/iam/security-credentials/`
//! with `X-aws-ec2-metadata-token`, a GET without it refused with 401; the container
//! credentials endpoint: JSON credentials for the `Authorization` token) and against moto's
//! STS (`AssumeRoleWithWebIdentity`); the request that reaches a stand-in for SES is
//! checked with botocore's own SigV4 signer (`tools/verify_sigv4.py`) and the secret the
//! source handed out.
//!
//! And each class of SES's answers applied by the outbox, against a stand-in following the
//! SES v2 API reference ("SendEmail", errors with their type in `x-amzn-ErrorType` and a
//! JSON `message`): 429 `TooManyRequestsException` deferred without an attempt, 400
//! `MessageRejected` a dead letter with SES's message, `AccountSuspendedException` and
//! 404 `NotFoundException` (an unknown configuration set) the breaker open, 500 retried.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

use crate::api_stand::{
    dead_letter, deferred_without_an_attempt, enqueue, opens_the_breaker, outbox_for, retried,
    run_until, to_one, Answer, Received, Stand,
};
use crate::common::TestDb;
use axum::{
    extract::{Path as UrlPath, State},
    http::{HeaderMap, Method, StatusCode, Uri},
    routing::any,
    Router,
};
use base64::Engine as _;
use outbox::smtp::{
    DkimSigner, Email, Mailer, MailerConfig, RawEmail, SesConfig, Unsubscribe, UnsubscribeKeys,
};
use serde_json::{json, Value};

const PATH: &str = "/v2/email/outbound-emails";
const REGION: &str = "eu-west-1";

/// An Ed25519 key made for this test only (`openssl genpkey -algorithm ed25519`).
const DKIM_KEY: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEILW5RxOWbE4voLMrX4yeoZlBKZPFEcPOuXt51NF0Gr5i
-----END PRIVATE KEY-----
";

/// SES's answer to a send.
const SENT: Answer = Answer::new(
    200,
    r#"{"MessageId":"0102018f3c2a7d1e-5d1c9a1b-0f0e-4a6b-9a1e-2b8f3c4d5e6f-000000"}"#,
);
const SES_ID: &str = "0102018f3c2a7d1e-5d1c9a1b-0f0e-4a6b-9a1e-2b8f3c4d5e6f-000000";

// ---- moto ----

/// A moto server on a free loopback port, killed when dropped.
struct Moto {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Moto {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("moto.log")).unwrap();
        let port = free_port();
        let mut child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("python3 must be installed");
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(dir.path().join("moto.log")).unwrap();
                panic!(
                    "moto's server exited ({status}) (scripts/test.sh installs it: pip install \
                     'moto[server]'): {log}"
                );
            }
            if http(port, "GET", "/moto-api/data.json", &[], b"")
                .await
                .is_some_and(|(status, _)| status == 200)
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "moto's server did not answer within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self {
            port,
            child,
            _dir: dir,
        }
    }

    /// Makes `domain` a verified identity, through boto3 (a request botocore signs).
    fn verify_domain(&self, domain: &str) {
        let script = "import boto3, sys\n\
            boto3.client('sesv2', region_name=sys.argv[2], endpoint_url=sys.argv[1],\n\
                aws_access_key_id='AKIAMOTOSETUP', aws_secret_access_key='setup')\\\n\
                .create_email_identity(EmailIdentity=sys.argv[3])\n";
        let out = Command::new("python3")
            .args(["-c", script])
            .arg(format!("http://127.0.0.1:{}", self.port))
            .arg(REGION)
            .arg(domain)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "CreateEmailIdentity: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// What moto keeps: `/moto-api/data.json`.
    async fn data(&self) -> Value {
        let (status, body) = http(self.port, "GET", "/moto-api/data.json", &[], b"")
            .await
            .expect("moto answers");
        assert_eq!(status, 200);
        serde_json::from_slice(&body).unwrap()
    }

    /// The raw messages SES took: (id, destinations, raw bytes).
    async fn sent(&self) -> Vec<(String, Vec<String>, Vec<u8>)> {
        let data = self.data().await;
        let Some(messages) = data["ses"]["RawMessage"].as_array() else {
            return Vec::new();
        };
        messages
            .iter()
            .map(|m| {
                let destinations = m["destinations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_str().unwrap().to_owned())
                    .collect();
                (
                    m["id"].as_str().unwrap().to_owned(),
                    destinations,
                    m["raw_data"].as_str().unwrap().as_bytes().to_vec(),
                )
            })
            .collect()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.0 request to 127.0.0.1:`port`; the status and body, or `None` when nothing
/// answers.
async fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<(u16, Vec<u8>)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let mut request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    stream.write_all(body).await.ok()?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .ok()?
        .ok()?;
    let head_end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let status = std::str::from_utf8(&answer[..head_end])
        .ok()?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()?;
    Some((status, answer[head_end + 4..].to_vec()))
}

// ---- independent checks ----

/// What dkimpy says about `message` with the DNS record of `signer`: (valid, signed
/// header names).
fn dkim_verdict(message: &[u8], signer: &DkimSigner) -> (bool, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("message.eml");
    std::fs::write(&file, message).unwrap();
    let (name, value) = signer.dns_record();
    let out = Command::new("python3")
        .arg(tool("verify_dkim.py"))
        .arg(&file)
        .arg(name)
        .arg(value)
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.code() != Some(2),
        "the DKIM verifier could not run (scripts/test.sh installs dkimpy): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verifier output {:?} ({e}): {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let h = verdict["h"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    (verdict["valid"].as_bool().unwrap(), h)
}

/// What botocore's SigV4 signer says about `request` (received on 127.0.0.1:`port`)
/// signed with `secret` (and `token`): its JSON verdict (`valid`, `access_key_id`,
/// `region`, `service`, `signed_headers`).
fn sigv4_verdict(request: &Received, port: u16, secret: &str, token: Option<&str>) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("request.json");
    let headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
        .collect();
    let input = json!({
        "method": "POST",
        "url": format!("http://127.0.0.1:{port}{PATH}"),
        "headers": headers,
        "body_base64": base64::engine::general_purpose::STANDARD.encode(&request.body),
        "secret_access_key": secret,
        "session_token": token,
    });
    std::fs::write(&file, input.to_string()).unwrap();
    let out = Command::new("python3")
        .arg(tool("verify_sigv4.py"))
        .arg(&file)
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.code() != Some(2),
        "the SigV4 check could not run (scripts/test.sh installs botocore with moto): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verifier output {:?} ({e}): {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn tool(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tools")
        .join(name)
}

/// Checks that `request` is signed for SES in [`REGION`] with `key` (botocore agrees).
fn assert_signed_by(request: &Received, port: u16, key: &str, secret: &str, token: Option<&str>) {
    let verdict = sigv4_verdict(request, port, secret, token);
    assert_eq!(verdict["valid"], true, "{verdict}");
    assert_eq!(verdict["access_key_id"], key, "{verdict}");
    assert_eq!(
        (&verdict["region"], &verdict["service"]),
        (&json!(REGION), &json!("ses"))
    );
    let signed = verdict["signed_headers"].as_array().unwrap();
    assert!(signed.contains(&json!("content-type")), "{verdict}");
    assert_eq!(
        token.is_some(),
        signed.contains(&json!("x-amz-security-token"))
    );
    // A wrong secret is caught: the check is not a rubber stamp.
    let wrong = sigv4_verdict(request, port, "not-the-secret", token);
    assert_eq!(wrong["valid"], false, "{wrong}");
}

// ---- helpers ----

/// An environment for the credential chain with nothing in it but a home directory
/// without `.aws`, the instance metadata service switched off, and `vars`.
fn environment(home: &Path, vars: &[(&str, String)]) -> Vec<(String, String)> {
    let mut env = vec![
        ("HOME".to_owned(), home.display().to_string()),
        ("AWS_EC2_METADATA_DISABLED".to_owned(), "true".to_owned()),
    ];
    for (name, value) in vars {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value.clone()));
    }
    env
}

/// SES through `port` on loopback (plain HTTP), keys from `env` alone.
fn ses_at(port: u16, env: Vec<(String, String)>) -> SesConfig {
    SesConfig::new(REGION)
        .host("127.0.0.1", Some(port))
        .plain_http()
        .environment(env)
}

/// SES through the stand-in, with keys given by the program.
fn mailer_for(stand: &Stand) -> Mailer {
    Mailer::new(MailerConfig::ses(
        SesConfig::new(REGION)
            .host("127.0.0.1", Some(stand.port))
            .plain_http()
            .credentials("AKIAEXAMPLESTATIC", "static-secret", None),
    ))
    .unwrap()
}

fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

// ---- moto: the message SES keeps ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueued_email_reaches_moto_as_our_dkim_signed_mime() {
    let moto = Moto::start().await;
    moto.verify_domain("example.com");
    let db = TestDb::new().await;
    let home = tempfile::tempdir().unwrap();
    let signer = DkimSigner::from_pem("example.com", "s1", DKIM_KEY).unwrap();
    let keys = UnsubscribeKeys::new("2026-11", [7u8; 32]).unwrap();
    let config = MailerConfig::ses(
        ses_at(
            moto.port,
            environment(
                home.path(),
                &[
                    ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEENV".to_owned()),
                    ("AWS_SECRET_ACCESS_KEY", "env-secret".to_owned()),
                ],
            ),
        )
        .configuration_set("transactional")
        .tag("campaign", "nov"),
    )
    .dkim(signer.clone())
    .unsubscribe(Unsubscribe::new("https://news.example.com/u/", keys).unwrap());
    let shown = format!("{config} {config:?}");
    assert!(!shown.contains("env-secret"), "{shown}");
    assert!(
        shown.starts_with(&format!(
            "ses://{REGION}?configuration_set=transactional&tag=campaign:nov&host=127.0.0.1:{}&tls=none&",
            moto.port
        )),
        "{shown}"
    );
    let mailer = Mailer::new(config).unwrap();
    assert_eq!(
        mailer.downstream().as_deref(),
        Some(&*format!("ses:127.0.0.1:{}", moto.port))
    );

    let receipt = Email::builder()
        .from("Shop <shop@example.com>")
        .to("Ann <ann@example.org>")
        .cc("cc@example.org")
        .bcc("hidden@example.org")
        .subject("Your receipt")
        .text("Plain text")
        .html("<p>HTML</p>")
        .attach("note.txt", "text/plain", b"hello".to_vec())
        .build()
        .unwrap();
    let receipt_id = enqueue(&db, receipt).await;
    let news = Email::builder()
        .from("News <news@example.com>")
        .to("bob@example.org")
        .subject("November news")
        .html("<p>News</p>")
        .list("november")
        .build()
        .unwrap();
    let news_id = enqueue(&db, news).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "delivered", || async {
        db.status(&receipt_id).await.as_deref() == Some("done")
            && db.status(&news_id).await.as_deref() == Some("done")
    })
    .await;

    let sent = moto.sent().await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    let find = |id: &str| {
        sent.iter()
            .find(|(_, _, raw)| {
                String::from_utf8_lossy(raw).contains(&format!("<{id}@example.com>"))
            })
            .unwrap_or_else(|| panic!("no message {id} in {sent:?}"))
    };

    let (ses_id, destinations, raw) = find(&receipt_id);
    assert!(!ses_id.is_empty());
    for address in ["ann@example.org", "cc@example.org", "hidden@example.org"] {
        assert!(
            destinations.iter().any(|d| d == address),
            "{address} not among {destinations:?}"
        );
    }
    assert!(raw.starts_with(b"DKIM-Signature: "), "signed first");
    let (valid, h) = dkim_verdict(raw, &signer);
    assert!(valid, "dkimpy refused the signature on what SES stored");
    let text = String::from_utf8_lossy(raw);
    let tampered = text.replacen("Subject: Your receipt", "Subject: Your receipt!", 1);
    assert_ne!(tampered, text);
    assert!(
        !dkim_verdict(tampered.as_bytes(), &signer).0,
        "a changed Subject fails: the check is not a rubber stamp"
    );
    assert!(
        h.contains(&"from".to_owned()) && h.contains(&"subject".to_owned()),
        "{h:?}"
    );
    let message = mail_parser::MessageParser::default()
        .parse(raw.as_slice())
        .expect("the stored message parses as MIME");
    assert_eq!(message.subject(), Some("Your receipt"));
    assert_eq!(
        message.message_id(),
        Some(&*format!("{receipt_id}@example.com"))
    );
    assert!(
        message.header_raw("Bcc").is_none(),
        "Bcc is not in the headers"
    );
    assert_eq!(message.body_text(0).as_deref(), Some("Plain text"));
    assert_eq!(message.attachment_count(), 1);

    // The list email: its one-click unsubscribe headers are inside the signature.
    let (_, _, raw) = find(&news_id);
    let (valid, h) = dkim_verdict(raw, &signer);
    assert!(valid, "dkimpy refused the list email's signature");
    for header in ["list-unsubscribe", "list-unsubscribe-post"] {
        assert!(h.contains(&header.to_owned()), "{header} not signed: {h:?}");
    }

    // SES's MessageId is the provider id of the delivery.
    let delivery = mailer
        .deliver_now(&to_one("carol@example.org"))
        .await
        .unwrap();
    let id = delivery.provider_id.expect("SES's MessageId");
    assert!(
        moto.sent().await.iter().any(|(ses_id, _, _)| *ses_id == id),
        "{id} is not a message moto took"
    );
    assert_eq!(delivery.accepted, ["carol@example.org"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_email_reaches_moto_as_it_is() {
    let moto = Moto::start().await;
    moto.verify_domain("example.com");
    let mailer = Mailer::new(MailerConfig::ses(
        SesConfig::new(REGION)
            .host("127.0.0.1", Some(moto.port))
            .plain_http()
            .credentials("AKIAEXAMPLESTATIC", "static-secret", None),
    ))
    .unwrap();
    let data = b"From: shop@example.com\r\nTo: ann@example.org\r\nSubject: Raw\r\n\r\nHello\r\n";
    let raw = RawEmail {
        from: Some("shop@example.com".into()),
        to: vec!["ann@example.org".into(), "hidden@example.org".into()],
        data: data.to_vec(),
    };
    let id = outbox::MessageId::from_string("01J0000000000000000000RAW0");
    let delivery = mailer
        .deliver_raw(&raw, &id, "outbox.raw_email")
        .await
        .unwrap();
    let sent = moto.sent().await;
    assert_eq!(sent.len(), 1);
    let (ses_id, destinations, stored) = &sent[0];
    assert_eq!(delivery.provider_id.as_deref(), Some(ses_id.as_str()));
    assert!(destinations.iter().any(|d| d == "hidden@example.org"));
    // The message as it was, with the Message-ID it lacked put in front.
    let front = format!("Message-ID: <{id}@example.com>\r\n");
    assert_eq!(stored, &[front.as_bytes(), data].concat());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_moto_has_not_verified_is_a_dead_letter_with_its_message() {
    let moto = Moto::start().await;
    let db = TestDb::new().await;
    let mailer = Mailer::new(MailerConfig::ses(
        SesConfig::new(REGION)
            .host("127.0.0.1", Some(moto.port))
            .plain_http()
            .credentials("AKIAEXAMPLESTATIC", "static-secret", None),
    ))
    .unwrap();
    let id = enqueue(&db, to_one("ann@example.org")).await;
    let outbox = outbox_for(&db, &mailer);
    run_until(&outbox, "dead letter", || async {
        db.status(&id).await.is_none()
    })
    .await;
    let dead = outbox
        .admin()
        .dead_letters()
        .list(&outbox::DeadLetterFilter::all(), 0, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    let error = &dead[0].last_error;
    assert!(
        error.contains(
            "ses answered HTTP 400: MessageRejected: Did not have authority to send from \
             email shop@example.com"
        ),
        "{error}"
    );
    assert!(moto.sent().await.is_empty());
}

// ---- the credential chain ----

/// What a metadata or credentials stand-in saw: (method, path, the token or
/// authorization header it carried).
type Seen = Arc<Mutex<Vec<(String, String, Option<String>)>>>;

#[derive(Clone)]
struct Imds {
    seen: Seen,
    /// Tokens handed out.
    tokens: Arc<Mutex<Vec<String>>>,
    /// Credentials handed out so far (each GET of the role's credentials a new key).
    issued: Arc<Mutex<u32>>,
}

const ROLE: &str = "outbox-mailer";

/// IMDSv2 as the EC2 user guide describes it ("Use the Instance Metadata Service to
/// access instance metadata", "Retrieve security credentials from instance metadata").
async fn imds(
    State(imds): State<Imds>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> (StatusCode, String) {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let token = header("x-aws-ec2-metadata-token");
    imds.seen.lock().unwrap().push((
        method.to_string(),
        uri.path().to_owned(),
        token
            .clone()
            .or(header("x-aws-ec2-metadata-token-ttl-seconds")),
    ));
    if uri.path() == "/latest/api/token" {
        if method != Method::PUT {
            return (StatusCode::METHOD_NOT_ALLOWED, String::new());
        }
        let ttl_ok = header("x-aws-ec2-metadata-token-ttl-seconds")
            .and_then(|t| t.parse::<u32>().ok())
            .is_some_and(|t| (1..=21_600).contains(&t));
        if !ttl_ok {
            return (StatusCode::BAD_REQUEST, String::new());
        }
        let mut tokens = imds.tokens.lock().unwrap();
        let token = format!("AQAEAimds-token-{}==", tokens.len() + 1);
        tokens.push(token.clone());
        return (StatusCode::OK, token);
    }
    // IMDSv2 only: a GET without a valid session token is refused.
    if !token.is_some_and(|t| imds.tokens.lock().unwrap().contains(&t)) {
        return (StatusCode::UNAUTHORIZED, String::new());
    }
    match uri.path() {
        "/latest/meta-data/iam/security-credentials/" => (StatusCode::OK, format!("{ROLE}\n")),
        p if p == format!("/latest/meta-data/iam/security-credentials/{ROLE}") => {
            let n = {
                let mut issued = imds.issued.lock().unwrap();
                *issued += 1;
                *issued
            };
            let now = SystemTime::now();
            let body = json!({
                "Code": "Success",
                "LastUpdated": rfc3339(now),
                "Type": "AWS-HMAC",
                "AccessKeyId": format!("ASIAIMDSEXAMPLE{n}"),
                "SecretAccessKey": format!("imds-secret-{n}"),
                "Token": format!("imds-session-token-{n}"),
                "Expiration": rfc3339(now + Duration::from_secs(6 * 3600)),
            });
            (StatusCode::OK, body.to_string())
        }
        _ => (StatusCode::NOT_FOUND, String::new()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_the_instance_metadata_sign_the_requests() {
    let state = Imds {
        seen: Seen::default(),
        tokens: Arc::default(),
        issued: Arc::default(),
    };
    let app = Router::new().fallback(any(imds)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let imds_port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    // The stand-in is IMDSv2-only: a GET without a session token is refused.
    let (status, _) = http(
        imds_port,
        "GET",
        "/latest/meta-data/iam/security-credentials/",
        &[],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(status, 401);
    state.seen.lock().unwrap().clear();

    // SES refuses the first request as an expired token, then takes the rest.
    let expired = Answer::new(
        403,
        r#"{"message":"The security token included in the request is expired"}"#,
    )
    .with_headers(&[(
        "x-amzn-errortype",
        "ExpiredTokenException:http://internal.amazon.com/coral/com.amazon.coral.service/",
    )]);
    let ses = Stand::start(PATH, vec![SENT, expired, SENT]).await;
    let home = tempfile::tempdir().unwrap();
    let env = environment(
        home.path(),
        &[
            ("AWS_EC2_METADATA_DISABLED", "false".to_owned()),
            (
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                format!("http://127.0.0.1:{imds_port}/"),
            ),
        ],
    );
    let mailer = Mailer::new(MailerConfig::ses(ses_at(ses.port, env))).unwrap();

    // Found once, kept for the next email.
    for to in ["ann@example.org", "ben@example.org"] {
        let result = mailer.deliver_now(&to_one(to)).await;
        if to == "ann@example.org" {
            assert_eq!(result.unwrap().provider_id.as_deref(), Some(SES_ID));
        } else {
            // The expired token: the breaker's class, and the keys are dropped.
            let e = result.unwrap_err();
            assert!(e.is_downstream_down(), "{e}");
            assert!(e.to_string().contains("ExpiredTokenException"), "{e}");
        }
    }
    let seen = state.seen.lock().unwrap().clone();
    let paths: Vec<(&str, &str)> = seen
        .iter()
        .map(|(m, p, _)| (m.as_str(), p.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            ("PUT", "/latest/api/token"),
            ("GET", "/latest/meta-data/iam/security-credentials/"),
            (
                "GET",
                "/latest/meta-data/iam/security-credentials/outbox-mailer"
            ),
        ],
        "one lookup for two emails"
    );
    assert_eq!(
        seen[0].2.as_deref(),
        Some("21600"),
        "the token's TTL asked for"
    );
    assert_eq!(
        seen[1].2.as_deref(),
        Some("AQAEAimds-token-1=="),
        "the token sent"
    );
    assert_eq!(seen[2].2.as_deref(), Some("AQAEAimds-token-1=="));

    // After the refusal the chain looks again: new keys sign the third email.
    mailer
        .deliver_now(&to_one("carol@example.org"))
        .await
        .unwrap();
    assert_eq!(state.seen.lock().unwrap().len(), 6, "a second lookup");
    let received = ses.received();
    assert_eq!(received.len(), 3);
    for (request, n) in [(&received[0], 1), (&received[1], 1), (&received[2], 2)] {
        assert_signed_by(
            request,
            ses.port,
            &format!("ASIAIMDSEXAMPLE{n}"),
            &format!("imds-secret-{n}"),
            Some(&format!("imds-session-token-{n}")),
        );
    }
}

#[derive(Clone)]
struct Container {
    seen: Seen,
}

const CONTAINER_TOKEN: &str = "Basic ZWNzLXRhc2stdG9rZW4=";

/// A container credentials endpoint as the ECS developer guide ("Amazon ECS task IAM
/// role") and the SDKs' reference ("Container credential provider") describe it.
async fn container_credentials(
    State(container): State<Container>,
    UrlPath(task): UrlPath<String>,
    headers: HeaderMap,
) -> (StatusCode, String) {
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    container
        .seen
        .lock()
        .unwrap()
        .push(("GET".to_owned(), task.clone(), authorization.clone()));
    if authorization.as_deref() != Some(CONTAINER_TOKEN) {
        return (
            StatusCode::UNAUTHORIZED,
            r#"{"message":"unauthorized"}"#.to_owned(),
        );
    }
    let body = json!({
        "AccessKeyId": "ASIACONTAINEREXAMPLE",
        "SecretAccessKey": "container-secret",
        "Token": "container-session-token",
        "Expiration": rfc3339(SystemTime::now() + Duration::from_secs(3600)),
        "RoleArn": "arn:aws:iam::123456789012:role/outbox-task",
    });
    (StatusCode::OK, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_the_container_endpoint_sign_the_requests() {
    let state = Container {
        seen: Seen::default(),
    };
    let app = Router::new()
        .route(
            "/v2/credentials/{task}",
            axum::routing::get(container_credentials),
        )
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let home = tempfile::tempdir().unwrap();
    let token_file = home.path().join("token");
    std::fs::write(&token_file, format!("{CONTAINER_TOKEN}\n")).unwrap();
    let full_uri = format!("http://127.0.0.1:{port}/v2/credentials/task-1");

    // The stand-in refuses a request without the token: the chain says so.
    let ses = Stand::answering(PATH, SENT).await;
    let without_token = environment(
        home.path(),
        &[("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri.clone())],
    );
    let mailer = Mailer::new(MailerConfig::ses(ses_at(ses.port, without_token))).unwrap();
    let e = mailer
        .deliver_now(&to_one("ann@example.org"))
        .await
        .unwrap_err();
    assert!(e.is_downstream_down(), "{e}");
    assert!(e.to_string().contains("answered HTTP 401"), "{e}");
    assert_eq!(ses.count(), 0, "nothing sent unsigned");

    let env = environment(
        home.path(),
        &[
            ("AWS_CONTAINER_CREDENTIALS_FULL_URI", full_uri),
            (
                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                token_file.display().to_string(),
            ),
        ],
    );
    let mailer = Mailer::new(MailerConfig::ses(ses_at(ses.port, env))).unwrap();
    for to in ["ann@example.org", "ben@example.org"] {
        mailer.deliver_now(&to_one(to)).await.unwrap();
    }
    let seen = state.seen.lock().unwrap().clone();
    assert_eq!(
        seen.len(),
        2,
        "refused once, then one lookup for two emails: {seen:?}"
    );
    assert_eq!(seen[1].1, "task-1");
    assert_eq!(seen[1].2.as_deref(), Some(CONTAINER_TOKEN));
    for request in ses.received() {
        assert_signed_by(
            &request,
            ses.port,
            "ASIACONTAINEREXAMPLE",
            "container-secret",
            Some("container-session-token"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_identity_is_exchanged_at_motos_sts_and_its_keys_sign_the_requests() {
    let moto = Moto::start().await;
    moto.verify_domain("example.com");
    let home = tempfile::tempdir().unwrap();
    let token_file = home.path().join("web-identity-token");
    std::fs::write(
        &token_file,
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvdXRib3gifQ.c2lnbmF0dXJl\n",
    )
    .unwrap();
    let role_arn = "arn:aws:iam::123456789012:role/outbox-mailer";
    let vars = [
        (
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            token_file.display().to_string(),
        ),
        ("AWS_ROLE_ARN", role_arn.to_owned()),
        ("AWS_ROLE_SESSION_NAME", "outbox-test".to_owned()),
        (
            "AWS_ENDPOINT_URL_STS",
            format!("http://127.0.0.1:{}", moto.port),
        ),
    ];

    // To a stand-in for SES, which keeps the request: signed with the keys STS issued.
    let ses = Stand::answering(PATH, SENT).await;
    let mailer = Mailer::new(MailerConfig::ses(ses_at(
        ses.port,
        environment(home.path(), &vars),
    )))
    .unwrap();
    mailer
        .deliver_now(&to_one("ann@example.org"))
        .await
        .unwrap();
    let data = moto.data().await;
    let roles = data["sts"]["AssumedRole"].as_array().unwrap();
    assert_eq!(roles.len(), 1, "{roles:?}");
    let role = &roles[0];
    assert_eq!(role["role_arn"], role_arn);
    assert_eq!(role["session_name"], "outbox-test");
    let received = ses.received();
    assert_eq!(received.len(), 1);
    assert_signed_by(
        &received[0],
        ses.port,
        role["access_key_id"].as_str().unwrap(),
        role["secret_access_key"].as_str().unwrap(),
        role["session_token"].as_str(),
    );

    // To moto's SES: an email sent with those credentials.
    let mailer = Mailer::new(MailerConfig::ses(ses_at(
        moto.port,
        environment(home.path(), &vars),
    )))
    .unwrap();
    let delivery = mailer
        .deliver_now(&to_one("ben@example.org"))
        .await
        .unwrap();
    let sent = moto.sent().await;
    assert_eq!(sent.len(), 1);
    assert_eq!(delivery.provider_id.as_deref(), Some(sent[0].0.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credentials_anywhere_opens_the_breaker_and_names_what_was_tried() {
    let db = TestDb::new().await;
    let ses = Stand::answering(PATH, SENT).await;
    let home = tempfile::tempdir().unwrap();
    // The instance metadata "endpoint" is a loopback port nothing listens on.
    let env = environment(
        home.path(),
        &[
            ("AWS_EC2_METADATA_DISABLED", "false".to_owned()),
            (
                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                format!("http://127.0.0.1:{}", free_port()),
            ),
        ],
    );
    let mailer = Mailer::new(MailerConfig::ses(ses_at(ses.port, env))).unwrap();
    let reason = opens_the_breaker(&db, &mailer, &format!("ses:127.0.0.1:{}", ses.port)).await;
    for part in [
        "no AWS credentials found",
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set",
        "AWS_WEB_IDENTITY_TOKEN_FILE is not set",
        "the shared files: no ",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "the EC2 instance metadata: http://127.0.0.1:",
    ] {
        assert!(reason.contains(part), "{part:?} in {reason}");
    }
    assert_eq!(ses.count(), 0, "nothing sent unsigned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_the_shared_credentials_file() {
    let ses = Stand::answering(PATH, SENT).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[default]\naws_access_key_id = AKIADEFAULTEXAMPLE\naws_secret_access_key = d\n\n\
         [mailer]\naws_access_key_id = AKIAPROFILEEXAMPLE\naws_secret_access_key = profile/secret+1\n",
    )
    .unwrap();
    let env = environment(home.path(), &[("AWS_PROFILE", "mailer".to_owned())]);
    let mailer = Mailer::new(MailerConfig::ses(ses_at(ses.port, env))).unwrap();
    mailer
        .deliver_now(&to_one("ann@example.org"))
        .await
        .unwrap();
    assert_signed_by(
        &ses.received()[0],
        ses.port,
        "AKIAPROFILEEXAMPLE",
        "profile/secret+1",
        None,
    );
}

// ---- SES's answers, classified ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ses_throttling_defers_without_using_an_attempt() {
    let db = TestDb::new().await;
    let ses = Stand::answering(
        PATH,
        Answer::new(429, r#"{"message":"Maximum sending rate exceeded."}"#).with_headers(&[
            (
                "x-amzn-errortype",
                "TooManyRequestsException:http://internal.amazon.com/coral/com.amazon.coral.availability/",
            ),
            ("x-amzn-requestid", "5c8a0a8e-1f2b-4c3d-9e4f-0a1b2c3d4e5f"),
        ]),
    )
    .await;
    let error = deferred_without_an_attempt(&db, &mailer_for(&ses), &ses).await;
    assert!(
        error.contains(
            "ses answered HTTP 429: TooManyRequestsException: Maximum sending rate exceeded. \
             (request id 5c8a0a8e-1f2b-4c3d-9e4f-0a1b2c3d4e5f)"
        ),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_ses_rejects_is_a_dead_letter_with_its_message() {
    let db = TestDb::new().await;
    let ses = Stand::answering(
        PATH,
        Answer::new(
            400,
            r#"{"message":"Email address is not verified. The following identities failed the check in region EU-WEST-1: shop@example.com"}"#,
        )
        .with_headers(&[("x-amzn-errortype", "MessageRejected:http://internal.amazon.com/coral/com.amazon.coral.service/")]),
    )
    .await;
    let error = dead_letter(&db, &mailer_for(&ses), &ses).await;
    assert!(
        error.contains(
            "ses answered HTTP 400: MessageRejected: Email address is not verified. The \
             following identities failed the check in region EU-WEST-1: shop@example.com"
        ),
        "{error}"
    );
    assert!(!error.contains("static-secret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_account_opens_the_breaker() {
    let db = TestDb::new().await;
    let ses = Stand::answering(
        PATH,
        Answer::new(
            400,
            r#"{"message":"Your account's ability to send email has been permanently restricted."}"#,
        )
        .with_headers(&[("x-amzn-errortype", "AccountSuspendedException")]),
    )
    .await;
    let reason = opens_the_breaker(
        &db,
        &mailer_for(&ses),
        &format!("ses:127.0.0.1:{}", ses.port),
    )
    .await;
    assert!(
        reason.contains("ses answered HTTP 400: AccountSuspendedException: Your account's"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_configuration_set_opens_the_breaker() {
    let db = TestDb::new().await;
    let ses = Stand::answering(
        PATH,
        Answer::new(
            404,
            r#"{"message":"Configuration set <transactionl> does not exist."}"#,
        )
        .with_headers(&[("x-amzn-errortype", "NotFoundException")]),
    )
    .await;
    let mailer = Mailer::new(MailerConfig::ses(
        SesConfig::new(REGION)
            .host("127.0.0.1", Some(ses.port))
            .plain_http()
            .credentials("AKIAEXAMPLESTATIC", "static-secret", None)
            .configuration_set("transactionl"),
    ))
    .unwrap();
    let reason = opens_the_breaker(&db, &mailer, &format!("ses:127.0.0.1:{}", ses.port)).await;
    assert!(
        reason.contains("NotFoundException: Configuration set"),
        "{reason}"
    );
    let sent = ses.received()[0].json();
    assert_eq!(sent["ConfigurationSetName"], "transactionl");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ses_server_error_is_retried() {
    let db = TestDb::new().await;
    let ses = Stand::answering(
        PATH,
        Answer::new(500, r#"{"message":"Internal Failure"}"#)
            .with_headers(&[("x-amzn-errortype", "InternalFailure")]),
    )
    .await;
    let error = retried(&db, &mailer_for(&ses), &ses).await;
    assert!(
        error.contains("ses answered HTTP 500: InternalFailure: Internal Failure"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_is_sesv2_send_email_with_the_raw_mime() {
    let ses = Stand::answering(PATH, SENT).await;
    let mailer = Mailer::new(MailerConfig::ses(
        SesConfig::new(REGION)
            .host("127.0.0.1", Some(ses.port))
            .plain_http()
            .credentials(
                "AKIAEXAMPLESTATIC",
                "static-secret",
                Some("static-token".into()),
            )
            .configuration_set("transactional")
            .tag("campaign", "nov")
            .tag("kind", "receipt"),
    ))
    .unwrap();
    let email = Email::builder()
        .from("Shop <shop@example.com>")
        .to("ann@example.org")
        .bcc("hidden@example.org")
        .subject("Hi")
        .text("Hello")
        .build()
        .unwrap();
    let delivery = mailer.deliver_now(&email).await.unwrap();
    assert_eq!(delivery.provider_id.as_deref(), Some(SES_ID));
    let request = &ses.received()[0];
    assert_eq!(request.header("content-type"), "application/json");
    assert_signed_by(
        request,
        ses.port,
        "AKIAEXAMPLESTATIC",
        "static-secret",
        Some("static-token"),
    );
    let json = request.json();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "ConfigurationSetName",
            "Content",
            "Destination",
            "EmailTags"
        ]
    );
    assert_eq!(json["ConfigurationSetName"], "transactional");
    assert_eq!(
        json["EmailTags"],
        json!([{"Name": "campaign", "Value": "nov"}, {"Name": "kind", "Value": "receipt"}])
    );
    assert_eq!(
        json["Destination"],
        json!({"ToAddresses": ["ann@example.org", "hidden@example.org"]})
    );
    let mime = base64::engine::general_purpose::STANDARD
        .decode(json["Content"]["Raw"]["Data"].as_str().unwrap())
        .unwrap();
    let message = mail_parser::MessageParser::default().parse(&mime).unwrap();
    assert_eq!(message.subject(), Some("Hi"));
    assert!(message.header_raw("Bcc").is_none());

    // Over SES's limit of recipients: refused before anything is sent, naming it.
    let mut crowded = Email::builder()
        .from("Shop <shop@example.com>")
        .subject("Hi")
        .text("Hello");
    for i in 0..51 {
        crowded = crowded.to(format!("user{i}@example.org"));
    }
    let e = mailer
        .deliver_now(&crowded.build().unwrap())
        .await
        .unwrap_err();
    assert!(e.is_permanent(), "{e}");
    assert!(
        e.to_string().contains("51 recipients") && e.to_string().contains("at most 50"),
        "{e}"
    );
    assert_eq!(ses.count(), 1, "nothing more sent");
}
