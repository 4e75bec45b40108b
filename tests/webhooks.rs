//! Provider webhooks against a real HTTP server on loopback: for each provider a
//! genuine-shaped request, signed in the test with keys and certificates `openssl` makes, is
//! accepted and its hard bounce or complaint suppresses the recipient; a tampered one is
//! refused and writes nothing. SNS: signature versions 1 and 2, the certificate fetched only
//! from an SNS host, the topic checked, the subscription confirmed; Mailgun: a replayed token
//! and a stale timestamp refused; a repeated event applied once; a bounce report that
//! arrives as mail (DSN) fed in raw.

mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::{
    path::Path,
    process::Command,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use base64::Engine as _;
use common::TestDb;
use futures::future::BoxFuture;
use outbox::{
    prelude::*,
    smtp::events::{dsn, sendgrid::SendGridKey, EventPolicy},
    web::{apply_events, SnsFetch, Webhooks},
    SuppressionFilter, SuppressionReason, SuppressionScope,
};
use serde_json::json;

const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:ses-events";
const CERT_URL: &str = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem";
const OUR_ID: &str = "01JD5Z3Q4V8W6X7Y8Z9A0B1C2D";

/// Runs `openssl args…`, feeding `input`; its stdout.
fn openssl(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl must be installed (apt-get install openssl)");
    if let Some(input) = input {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The test's SNS: what a GET of an SNS URL returns, and the URLs fetched.
struct FakeSns {
    certificate: Vec<u8>,
    fetched: Mutex<Vec<String>>,
}

impl SnsFetch for FakeSns {
    fn get<'a>(&'a self, url: &'a url::Url) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        self.fetched.lock().unwrap().push(url.to_string());
        let body = if url.as_str() == CERT_URL {
            Ok(self.certificate.clone())
        } else if url.path().ends_with(".pem") {
            Err(format!("GET {url} answered 404 Not Found"))
        } else {
            Ok(b"<ConfirmSubscriptionResponse/>".to_vec())
        };
        Box::pin(async move { body })
    }
}

impl FakeSns {
    /// How many certificates were fetched.
    fn certificate_fetches(&self) -> usize {
        let fetched = self.fetched.lock().unwrap();
        fetched.iter().filter(|u| u.ends_with(".pem")).count()
    }
}

/// Keys and secrets the test signs with, and the endpoint's router over `db`.
struct Setup {
    dir: tempfile::TempDir,
    sns: Arc<FakeSns>,
    sendgrid_public: String,
}

/// Distinct SNS message ids.
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

const MAILGUN_KEY: &str = "key-mailgun-signing-0123456789";

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        openssl(d, &["genrsa", "-out", "sns.key", "2048"], None);
        let certificate = openssl(
            d,
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                "sns.key",
                "-subj",
                "/CN=sns.amazonaws.com",
                "-days",
                "2",
            ],
            None,
        );
        openssl(
            d,
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                "sg.key",
            ],
            None,
        );
        let public = openssl(
            d,
            &["ec", "-in", "sg.key", "-pubout", "-outform", "DER"],
            None,
        );
        Self {
            sns: Arc::new(FakeSns {
                certificate,
                fetched: Mutex::default(),
            }),
            sendgrid_public: b64(&public),
            dir,
        }
    }

    async fn serve(&self, db: &TestDb) -> String {
        let hooks = Webhooks::new(Admin::new(db.backend()))
            .sns_with_fetcher([TOPIC], self.sns.clone())
            .sendgrid(SendGridKey::from_base64(&self.sendgrid_public).unwrap())
            .mailgun(MAILGUN_KEY)
            .postmark("postmark", "hook-password");
        let app = outbox::web::axum::Router::new().nest("/hooks", hooks.into_router());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { outbox::web::axum::serve(listener, app).await.unwrap() });
        format!("http://{addr}/hooks")
    }

    /// An SNS message of `kind` carrying `message`, signed with version `version`, published
    /// now.
    fn sns(&self, kind: &str, message: &str, version: &str) -> serde_json::Value {
        let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
        self.sns_at(kind, message, version, &now)
    }

    /// As [`sns`](Self::sns), with the signed `Timestamp` `timestamp`.
    fn sns_at(
        &self,
        kind: &str,
        message: &str,
        version: &str,
        timestamp: &str,
    ) -> serde_json::Value {
        let id = format!(
            "sns-{}",
            NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        );
        let mut text = format!("Message\n{message}\nMessageId\n{id}\n");
        let mut body = json!({
            "Type": kind, "MessageId": id, "TopicArn": TOPIC, "Message": message,
            "Timestamp": timestamp, "SignatureVersion": version, "SigningCertURL": CERT_URL,
        });
        if kind == "SubscriptionConfirmation" {
            let url = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=t1";
            text += &format!("SubscribeURL\n{url}\nTimestamp\n{timestamp}\nToken\nt1\nTopicArn\n{TOPIC}\nType\n{kind}\n");
            body["SubscribeURL"] = url.into();
            body["Token"] = "t1".into();
        } else {
            text += &format!("Timestamp\n{timestamp}\nTopicArn\n{TOPIC}\nType\n{kind}\n");
        }
        let digest = if version == "1" { "-sha1" } else { "-sha256" };
        let signature = openssl(
            self.dir.path(),
            &["dgst", digest, "-sign", "sns.key"],
            Some(text.as_bytes()),
        );
        body["Signature"] = b64(&signature).into();
        body
    }

    /// SendGrid's signature of `timestamp` + `body`.
    fn sendgrid_signature(&self, timestamp: &str, body: &[u8]) -> String {
        let mut signed = timestamp.as_bytes().to_vec();
        signed.extend_from_slice(body);
        b64(&openssl(
            self.dir.path(),
            &["dgst", "-sha256", "-sign", "sg.key"],
            Some(&signed),
        ))
    }
}

/// A Mailgun body signed (or not) with the signing key.
fn mailgun_body(dir: &Path, timestamp: u64, token: &str, event: serde_json::Value) -> Vec<u8> {
    let text = format!("{timestamp}{token}");
    let mac = openssl(
        dir,
        &["dgst", "-sha256", "-hmac", MAILGUN_KEY, "-r"],
        Some(text.as_bytes()),
    );
    let hex = String::from_utf8(mac)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    serde_json::to_vec(&json!({
        "signature": { "timestamp": timestamp.to_string(), "token": token, "signature": hex },
        "event-data": event,
    }))
    .unwrap()
}

fn ses_bounce(recipient: &str, kind: &str) -> String {
    json!({
        "notificationType": "Bounce",
        "bounce": {
            "bounceType": kind, "bounceSubType": "General", "timestamp": "2026-11-24T09:59:58.000Z",
            "bouncedRecipients": [{ "emailAddress": recipient, "diagnosticCode": "smtp; 550 5.1.1 user unknown" }],
        },
        "mail": { "messageId": "ses-1", "commonHeaders": { "messageId": format!("<{OUR_ID}@example.com>") } },
    })
    .to_string()
}

async fn post(url: &str, body: Vec<u8>, headers: &[(&str, String)]) -> (u16, String) {
    let mut r = reqwest::Client::new().post(url).body(body);
    for (name, value) in headers {
        r = r.header(*name, value);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn entries(db: &TestDb) -> Vec<outbox::Suppression> {
    Admin::new(db.backend())
        .suppressions()
        .list(&SuppressionFilter::default(), 100, 0)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ses_hard_bounce_through_sns_suppresses_the_address_and_forgeries_are_refused() {
    let s = Setup::new();
    let db = TestDb::new().await;
    let url = s.serve(&db).await;
    let sns = format!("{url}/sns");

    // A subscription is confirmed by fetching its SubscribeURL (an SNS host).
    let confirm = s.sns(
        "SubscriptionConfirmation",
        "You have chosen to subscribe",
        "1",
    );
    let (code, body) = post(&sns, serde_json::to_vec(&confirm).unwrap(), &[]).await;
    assert_eq!(code, 200, "{body}");
    assert!(s
        .sns
        .fetched
        .lock()
        .unwrap()
        .iter()
        .any(|u| u.contains("ConfirmSubscription")));

    // Tampered (the message changed after signing), another topic, a certificate elsewhere.
    let mut tampered = s.sns(
        "Notification",
        &ses_bounce("ann@example.com", "Permanent"),
        "1",
    );
    tampered["Message"] = ses_bounce("bob@example.com", "Permanent").into();
    assert_eq!(
        post(&sns, serde_json::to_vec(&tampered).unwrap(), &[])
            .await
            .0,
        401
    );
    let mut topic = s.sns(
        "Notification",
        &ses_bounce("ann@example.com", "Permanent"),
        "1",
    );
    topic["TopicArn"] = "arn:aws:sns:us-east-1:999:other".into();
    assert_eq!(
        post(&sns, serde_json::to_vec(&topic).unwrap(), &[]).await.0,
        403
    );
    let mut elsewhere = s.sns(
        "Notification",
        &ses_bounce("ann@example.com", "Permanent"),
        "1",
    );
    elsewhere["SigningCertURL"] =
        "https://sns.us-east-1.amazonaws.com.evil.example/cert.pem".into();
    assert_eq!(
        post(&sns, serde_json::to_vec(&elsewhere).unwrap(), &[])
            .await
            .0,
        403
    );
    assert!(
        s.sns
            .fetched
            .lock()
            .unwrap()
            .iter()
            .all(|u| u.starts_with("https://sns.us-east-1.amazonaws.com/")),
        "nothing fetched from another host"
    );
    assert!(
        entries(&db).await.is_empty(),
        "refused requests write nothing"
    );

    // Genuine: a v1 hard bounce and a v2 complaint; a soft bounce suppresses nothing.
    let bounce = s.sns(
        "Notification",
        &ses_bounce("Ann@Example.com", "Permanent"),
        "1",
    );
    let (code, body) = post(&sns, serde_json::to_vec(&bounce).unwrap(), &[]).await;
    assert_eq!(code, 200, "{body}");
    let complaint = json!({
        "eventType": "Complaint",
        "complaint": { "complainedRecipients": [{ "emailAddress": "carol@example.com" }], "complaintFeedbackType": "abuse" },
        "mail": { "headers": [{ "name": "Message-ID", "value": "<x@example.com>" }] },
    });
    let complaint = s.sns("Notification", &complaint.to_string(), "2");
    assert_eq!(
        post(&sns, serde_json::to_vec(&complaint).unwrap(), &[])
            .await
            .0,
        200
    );
    let soft = s.sns(
        "Notification",
        &ses_bounce("dave@example.com", "Transient"),
        "2",
    );
    assert_eq!(
        post(&sns, serde_json::to_vec(&soft).unwrap(), &[]).await.0,
        200
    );
    let listed = entries(&db).await;
    let ann = listed
        .iter()
        .find(|e| e.address == "ann@example.com")
        .expect("ann suppressed");
    assert_eq!(
        (ann.reason, &ann.scope),
        (SuppressionReason::HardBounce, &SuppressionScope::All)
    );
    assert_eq!(
        ann.source.as_deref(),
        Some(format!("ses hard_bounce of message {OUR_ID}").as_str())
    );
    let carol = listed
        .iter()
        .find(|e| e.address == "carol@example.com")
        .expect("carol suppressed");
    assert_eq!(carol.reason, SuppressionReason::Complaint);
    assert_eq!(listed.len(), 2, "{listed:?}");

    // The bounced address gets no more mail: the next enqueue is recorded as suppressed.
    let email = outbox::smtp::Email::builder()
        .from("shop@example.com")
        .to("ann@example.com")
        .subject("Receipt")
        .text("Thanks")
        .build()
        .unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let _ = email.enqueue(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let counts = Admin::new(db.backend()).status_counts().await.unwrap();
    assert_eq!(
        counts
            .iter()
            .find(|c| c.type_tag == "outbox.email")
            .unwrap()
            .suppressed,
        1
    );

    // SNS sends the same notification again: applied once (a removed entry stays removed).
    let admin = Admin::new(db.backend());
    assert!(admin
        .suppressions()
        .remove("ann@example.com", &SuppressionScope::All)
        .await
        .unwrap());
    assert_eq!(
        post(&sns, serde_json::to_vec(&bounce).unwrap(), &[])
            .await
            .0,
        200
    );
    assert!(entries(&db)
        .await
        .iter()
        .all(|e| e.address != "ann@example.com"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sendgrid_mailgun_and_postmark_events_are_verified_and_applied() {
    let s = Setup::new();
    let db = TestDb::new().await;
    let url = s.serve(&db).await;

    // SendGrid: ECDSA P-256 over timestamp + body.
    let body = serde_json::to_vec(&json!([
        { "email": "erin@example.com", "event": "bounce", "type": "bounce", "sg_event_id": "sg-1",
          "smtp-id": format!("<{OUR_ID}@example.com>"), "timestamp": 1_795_000_000, "reason": "550 5.1.1" },
        { "email": "erin@example.com", "event": "delivered", "sg_event_id": "sg-0", "timestamp": 1_795_000_000 },
    ]))
    .unwrap();
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let sig = s.sendgrid_signature(&ts, &body);
    let headers = |sig: &str| {
        vec![
            ("X-Twilio-Email-Event-Webhook-Signature", sig.to_owned()),
            ("X-Twilio-Email-Event-Webhook-Timestamp", ts.clone()),
        ]
    };
    let mut tampered = body.clone();
    tampered[10] ^= 1;
    assert_eq!(
        post(&format!("{url}/sendgrid"), tampered, &headers(&sig))
            .await
            .0,
        401
    );
    assert_eq!(
        post(
            &format!("{url}/sendgrid"),
            body.clone(),
            &headers("bm90IGEgc2ln")
        )
        .await
        .0,
        401
    );
    assert!(entries(&db).await.is_empty());
    let (code, text) = post(&format!("{url}/sendgrid"), body, &headers(&sig)).await;
    assert_eq!(code, 200, "{text}");
    assert!(entries(&db)
        .await
        .iter()
        .any(|e| e.address == "erin@example.com" && e.reason == SuppressionReason::HardBounce));

    // Mailgun: HMAC-SHA256 of timestamp + token; a token used once; a stale timestamp refused.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let complained = json!({
        "event": "complained", "recipient": "frank@example.com", "id": "mg-1", "timestamp": now as f64,
        "message": { "headers": { "message-id": format!("{OUR_ID}@example.com") } },
    });
    let mailgun = format!("{url}/mailgun");
    let body = mailgun_body(s.dir.path(), now, "token-1", complained.clone());
    let mut forged: serde_json::Value = serde_json::from_slice(&body).unwrap();
    forged["signature"]["token"] = "token-2".into();
    assert_eq!(
        post(&mailgun, serde_json::to_vec(&forged).unwrap(), &[])
            .await
            .0,
        401
    );
    let stale = mailgun_body(s.dir.path(), now - 10 * 3600, "token-3", complained.clone());
    assert_eq!(post(&mailgun, stale, &[]).await.0, 403);
    assert!(entries(&db)
        .await
        .iter()
        .all(|e| e.address != "frank@example.com"));
    assert_eq!(post(&mailgun, body.clone(), &[]).await.0, 200);
    assert!(entries(&db)
        .await
        .iter()
        .any(|e| e.address == "frank@example.com" && e.reason == SuppressionReason::Complaint));
    assert_eq!(post(&mailgun, body, &[]).await.0, 406, "a replayed token");

    // Postmark: basic authentication.
    let record = serde_json::to_vec(&json!({
        "RecordType": "Bounce", "ID": 42, "Type": "HardBounce", "Email": "gina@example.com",
        "BouncedAt": "2026-11-24T10:00:00Z", "Description": "The server was unable to deliver your message",
    }))
    .unwrap();
    let auth = |password: &str| {
        vec![(
            "Authorization",
            format!("Basic {}", b64(format!("postmark:{password}").as_bytes())),
        )]
    };
    assert_eq!(
        post(&format!("{url}/postmark"), record.clone(), &auth("wrong"))
            .await
            .0,
        401
    );
    assert_eq!(
        post(&format!("{url}/postmark"), record.clone(), &[])
            .await
            .0,
        401
    );
    assert!(entries(&db)
        .await
        .iter()
        .all(|e| e.address != "gina@example.com"));
    assert_eq!(
        post(&format!("{url}/postmark"), record, &auth("hook-password"))
            .await
            .0,
        200
    );
    assert!(entries(&db)
        .await
        .iter()
        .any(|e| e.address == "gina@example.com"));
    assert_eq!(entries(&db).await.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounce_report_fed_in_as_mail_suppresses_the_address_once() {
    let db = TestDb::new().await;
    let raw = format!(
        "From: MAILER-DAEMON@mx.example.net\r\nMessage-ID: <dsn-7@mx.example.net>\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nUndeliverable.\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.net\r\n\r\nFinal-Recipient: rfc822; hank@example.net\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 unknown\r\n\r\n--b\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <{OUR_ID}@example.com>\r\n\r\n--b--\r\n"
    );
    let events = dsn::events(raw.as_bytes()).unwrap();
    assert_eq!(events[0].outbox_id.as_deref(), Some(OUR_ID));
    let suppressions = Admin::new(db.backend()).suppressions();
    let policy = EventPolicy::default();
    assert_eq!(
        apply_events(&suppressions, &policy, &events).await.unwrap(),
        1
    );
    assert_eq!(
        apply_events(&suppressions, &policy, &events).await.unwrap(),
        0,
        "once"
    );
    let listed = entries(&db).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].address.as_str(), listed[0].reason),
        ("hank@example.net", SuppressionReason::HardBounce)
    );
}

/// The HTTPS fetcher SNS certificates come through: it reads a body from a server whose
/// certificate it trusts, and refuses one it does not (a server on loopback with a test CA).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_https_fetcher_checks_the_servers_certificate() {
    use outbox::web::HttpsFetch;
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let ca = smtp_sink::TestCa::new();
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                let _ = tls.read(&mut buf).await;
                let _ = tls
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n-----CERT---")
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    let url = url::Url::parse(&format!("https://localhost:{port}/cert.pem")).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let trusted = HttpsFetch::with_roots(roots).unwrap();
    assert_eq!(trusted.get(&url).await.unwrap(), b"-----CERT---");
    let public_roots = HttpsFetch::new().unwrap();
    let refused = public_roots.get(&url).await.unwrap_err();
    assert!(refused.contains("TLS"), "{refused}");
}

/// Forged SNS messages cannot make the endpoint fetch certificates: one naming the real
/// certificate's URL is refused with the certificate kept from the first fetch (20 forged
/// messages, one fetch, also when they arrive together), and messages naming certificates
/// that do not exist fetch at most 10 a minute (503 beyond, which SNS retries); a genuine
/// message still verifies with the kept certificate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_sns_messages_do_not_refetch_the_certificate() {
    let s = Setup::new();
    let db = TestDb::new().await;
    let url = s.serve(&db).await;
    let sns = format!("{url}/sns");
    let forged = |n: usize| {
        let mut m = s.sns(
            "Notification",
            &ses_bounce("ann@example.com", "Permanent"),
            "2",
        );
        m["Message"] = ses_bounce(&format!("victim{n}@example.com"), "Permanent").into();
        serde_json::to_vec(&m).unwrap()
    };
    let posts: Vec<_> = (0..20).map(|n| post(&sns, forged(n), &[])).collect();
    let codes: Vec<u16> = futures::future::join_all(posts)
        .await
        .into_iter()
        .map(|(code, _)| code)
        .collect();
    assert!(codes.iter().all(|c| *c == 401), "{codes:?}");
    for n in 20..40 {
        assert_eq!(post(&sns, forged(n), &[]).await.0, 401);
    }
    assert_eq!(
        s.sns.certificate_fetches(),
        1,
        "40 forged messages, one fetch: {:?}",
        s.sns.fetched.lock().unwrap()
    );

    // Certificates that do not exist: at most 10 fetches a minute, a failed URL not again.
    let mut answers = Vec::new();
    for n in 0..20 {
        let mut m = s.sns(
            "Notification",
            &ses_bounce("ann@example.com", "Permanent"),
            "2",
        );
        m["SigningCertURL"] =
            format!("https://sns.us-east-1.amazonaws.com/SimpleNotificationService-x{n}.pem")
                .into();
        let body = serde_json::to_vec(&m).unwrap();
        answers.push(post(&sns, body.clone(), &[]).await.0);
        answers.push(post(&sns, body, &[]).await.0);
    }
    assert!(answers.iter().all(|c| *c == 503), "{answers:?}");
    assert_eq!(
        s.sns.certificate_fetches(),
        10,
        "at most 10 a minute, the first one included: {:?}",
        s.sns.fetched.lock().unwrap()
    );

    // The genuine sender is not locked out: the kept certificate verifies it.
    let genuine = s.sns(
        "Notification",
        &ses_bounce("ann@example.com", "Permanent"),
        "1",
    );
    let (code, body) = post(&sns, serde_json::to_vec(&genuine).unwrap(), &[]).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(s.sns.certificate_fetches(), 10);
    let listed = entries(&db).await;
    assert_eq!(listed.len(), 1, "only the genuine bounce: {listed:?}");
}

/// Signed timestamps are checked: an SNS message published in 2001 or with a `Timestamp`
/// that is not a time, a SendGrid request signed in 2001 or with an unreadable timestamp,
/// and timestamps far ahead of our clock are refused (signature valid or not) and write
/// nothing; fresh ones inside the windows are accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_or_unreadable_signed_timestamps_are_refused() {
    let s = Setup::new();
    let db = TestDb::new().await;
    let url = s.serve(&db).await;
    let sns = format!("{url}/sns");
    let now = SystemTime::now();
    let iso = |t: SystemTime| humantime::format_rfc3339_millis(t).to_string();
    let hour = std::time::Duration::from_secs(3600);
    for (timestamp, code) in [
        ("2001-09-09T01:46:40.000Z".to_owned(), 403),
        ("not-a-time".to_owned(), 400),
        (iso(now - 3 * hour), 403),
        (iso(now + hour), 403),
    ] {
        let m = s.sns_at(
            "Notification",
            &ses_bounce("ann@example.com", "Permanent"),
            "2",
            &timestamp,
        );
        let (got, body) = post(&sns, serde_json::to_vec(&m).unwrap(), &[]).await;
        assert_eq!(got, code, "SNS Timestamp {timestamp}: {body}");
        assert!(
            body.contains("timestamp") || body.contains("Timestamp"),
            "{body}"
        );
    }
    assert!(
        entries(&db).await.is_empty(),
        "refused requests write nothing"
    );
    let recent = s.sns_at(
        "Notification",
        &ses_bounce("ann@example.com", "Permanent"),
        "2",
        &iso(now - hour),
    );
    let (got, body) = post(&sns, serde_json::to_vec(&recent).unwrap(), &[]).await;
    assert_eq!(
        got, 200,
        "an hour old (SNS retries for up to an hour): {body}"
    );

    let sendgrid = format!("{url}/sendgrid");
    let event = |n: u32| {
        serde_json::to_vec(&json!([{ "email": format!("sg{n}@example.com"), "event": "bounce",
            "type": "bounce", "sg_event_id": format!("sg-fresh-{n}"), "timestamp": 1_000_000_000 }]))
        .unwrap()
    };
    let unix = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_secs().to_string();
    for (n, (timestamp, code)) in [
        ("1000000000".to_owned(), 403),
        ("not-a-time".to_owned(), 400),
        (unix(now - 26 * hour), 403),
        (unix(now + hour), 403),
    ]
    .into_iter()
    .enumerate()
    {
        let body = event(n as u32);
        let sig = s.sendgrid_signature(&timestamp, &body);
        let headers = [
            ("X-Twilio-Email-Event-Webhook-Signature", sig),
            ("X-Twilio-Email-Event-Webhook-Timestamp", timestamp.clone()),
        ];
        let (got, text) = post(&sendgrid, body, &headers).await;
        assert_eq!(got, code, "SendGrid timestamp {timestamp}: {text}");
    }
    assert_eq!(entries(&db).await.len(), 1, "only the fresh SNS bounce");
    let body = event(9);
    let timestamp = unix(now - 23 * hour);
    let headers = [
        (
            "X-Twilio-Email-Event-Webhook-Signature",
            s.sendgrid_signature(&timestamp, &body),
        ),
        ("X-Twilio-Email-Event-Webhook-Timestamp", timestamp),
    ];
    let (got, text) = post(&sendgrid, body, &headers).await;
    assert_eq!(got, 200, "23 hours old (SendGrid retries for 24): {text}");
    assert_eq!(entries(&db).await.len(), 2);
}

/// A bounce naming 100,000 recipients (SES reports one event per recipient) is applied in
/// full, each recipient suppressed once, and applying it again writes nothing. The time it
/// took is printed (not asserted): batches of up to 1,000 events per transaction instead
/// of one transaction per recipient.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounce_of_100000_recipients_is_applied_in_batches() {
    let db = TestDb::new().await;
    let recipients: Vec<_> = (0..100_000)
        .map(|n| json!({ "emailAddress": format!("r{n}@example.com") }))
        .collect();
    let message = json!({
        "notificationType": "Bounce",
        "bounce": { "bounceType": "Permanent", "bounceSubType": "General",
                    "timestamp": "2026-11-24T09:59:58.000Z", "bouncedRecipients": recipients },
        "mail": { "messageId": "ses-big" },
    });
    let sns = outbox::smtp::events::sns::SnsMessage {
        kind: "Notification".into(),
        message_id: "big-1".into(),
        topic_arn: TOPIC.into(),
        subject: None,
        message: message.to_string(),
        timestamp: "2026-11-24T10:00:00.000Z".into(),
        signature_version: "2".into(),
        signature: String::new(),
        signing_cert_url: CERT_URL.into(),
        token: None,
        subscribe_url: None,
    };
    let events = sns.ses_events().unwrap();
    assert_eq!(events.len(), 100_000);
    let suppressions = Admin::new(db.backend()).suppressions();
    let policy = EventPolicy::default();
    let started = std::time::Instant::now();
    let written = apply_events(&suppressions, &policy, &events).await.unwrap();
    eprintln!(
        "applied 100,000 events in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(written, 100_000);
    let all = SuppressionFilter::default();
    assert_eq!(suppressions.count(&all).await.unwrap(), 100_000);
    let started = std::time::Instant::now();
    assert_eq!(
        apply_events(&suppressions, &policy, &events).await.unwrap(),
        0,
        "each event once"
    );
    eprintln!(
        "applied them again (all seen) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
