//! DKIM: every email the mailer sends into a real SMTP server on loopback carries a
//! signature that an independent verifier (dkimpy, `tests/tools/verify_dkim.py`) accepts
//! with the DNS record the signer says to publish, for RSA (PKCS#1 and PKCS#8) and Ed25519
//! keys made by `openssl`; a list email's one-click unsubscribe headers (RFC 8058), written
//! by the mailer with a signed token, are inside the signature; a message changed on the
//! way fails verification.

mod common;
#[path = "common/smtp_sink.rs"]
mod smtp_sink;

use std::{path::Path, process::Command, time::Duration};

use common::TestDb;
use outbox::{
    prelude::*,
    smtp::{
        DkimSigner, Email, Mailer, MailerConfig, RawEmail, SmtpConfig, TestRedirect, Unsubscribe,
        UnsubscribeKeys,
    },
};
use smtp_sink::{SinkOptions, SmtpSink};

/// A private key made by `openssl <command> -out <file> <args>`, as PEM.
fn openssl_key(dir: &Path, name: &str, args: &[&str]) -> String {
    let path = dir.join(name);
    let out = Command::new("openssl")
        .arg(args[0])
        .arg("-out")
        .arg(&path)
        .args(&args[1..])
        .output()
        .expect("openssl must be installed (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(&path).unwrap()
}

fn rsa_pkcs1(dir: &Path) -> String {
    let pem = openssl_key(dir, "rsa1.pem", &["genrsa", "-traditional", "2048"]);
    assert!(pem.starts_with("-----BEGIN RSA PRIVATE KEY-----"), "{pem}");
    pem
}

fn rsa_pkcs8(dir: &Path) -> String {
    let pem = openssl_key(
        dir,
        "rsa8.pem",
        &[
            "genpkey",
            "-algorithm",
            "rsa",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ],
    );
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
    pem
}

fn ed25519(dir: &Path) -> String {
    openssl_key(dir, "ed.pem", &["genpkey", "-algorithm", "ed25519"])
}

/// What the independent verifier says about `message` with the DNS record of `signer`.
#[derive(Debug, serde::Deserialize)]
struct Verdict {
    valid: bool,
    h: Vec<String>,
    a: Option<String>,
}

fn verify(dir: &Path, message: &[u8], signer: &DkimSigner) -> Verdict {
    let (name, value) = signer.dns_record();
    verify_with(dir, message, &name, &value)
}

fn verify_with(dir: &Path, message: &[u8], name: &str, value: &str) -> Verdict {
    let file = dir.join("message.eml");
    std::fs::write(&file, message).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/verify_dkim.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&file)
        .arg(name)
        .arg(value)
        .output()
        .expect("python3 must be installed");
    assert!(
        out.status.code() != Some(2),
        "the verifier could not run (bash .ci/run installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verifier output {:?} ({e}); stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn mailer(sink: &SmtpSink, signers: Vec<DkimSigner>) -> Mailer {
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let config = signers
        .into_iter()
        .fold(MailerConfig::smtp(smtp), MailerConfig::dkim)
        .unsubscribe(unsubscribe());
    Mailer::new(config).unwrap()
}

fn keys() -> UnsubscribeKeys {
    UnsubscribeKeys::new("2026-11", [42u8; 32]).unwrap()
}

fn unsubscribe() -> Unsubscribe {
    Unsubscribe::new("https://example.com/outbox/u/", keys())
        .unwrap()
        .mailto("unsubscribe@example.com")
}

fn newsletter(to: &str) -> Email {
    Email::builder()
        .from(("News", "news@example.com"))
        .to(to)
        .subject("Our November issue — with ümlauts")
        .text("Hello,\nthe news.\n\n.\nA line with a lone dot above.\n")
        .html("<p>Hello, the news.</p>")
        .list("november")
        .build()
        .unwrap()
}

/// Sends `email` through an outbox on SQLite into the sink and returns the bytes received.
async fn delivered(sink: &SmtpSink, mailer: &Mailer, email: Email) -> Vec<u8> {
    let db = TestDb::new().await;
    let before = sink.received().len();
    let mut tx = db.pool.begin().await.unwrap();
    assert!(!email.enqueue(&mut *tx).await.unwrap().is_duplicate());
    tx.commit().await.unwrap();
    let report = Outbox::new(db.backend())
        .register::<Email, _>(mailer.handler())
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.delivered, 1, "{report:?}");
    let received = sink.received();
    assert_eq!(received.len(), before + 1);
    received.last().unwrap().data.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rsa_and_ed25519_signatures_verify_and_cover_the_unsubscribe_headers() {
    let dir = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(SinkOptions::default()).await;
    for (pem, algorithm) in [
        (rsa_pkcs1(dir.path()), "rsa-sha256"),
        (rsa_pkcs8(dir.path()), "rsa-sha256"),
        (ed25519(dir.path()), "ed25519-sha256"),
    ] {
        let signer = DkimSigner::from_pem("example.com", "nov2026", &pem).unwrap();
        let data = delivered(
            &sink,
            &mailer(&sink, vec![signer.clone()]),
            newsletter("ada@example.net"),
        )
        .await;
        assert!(
            data.starts_with(b"DKIM-Signature:"),
            "{}",
            String::from_utf8_lossy(&data)
        );
        let verdict = verify(dir.path(), &data, &signer);
        assert!(
            verdict.valid,
            "{algorithm}: {verdict:?}\n{}",
            String::from_utf8_lossy(&data)
        );
        assert_eq!(verdict.a.as_deref(), Some(algorithm));
        for header in [
            "from",
            "subject",
            "to",
            "message-id",
            "list-unsubscribe",
            "list-unsubscribe-post",
        ] {
            assert!(
                verdict.h.contains(&header.to_owned()),
                "{header} not signed: {:?}",
                verdict.h
            );
        }
        // The one-click URL carries a token that names the recipient and the list.
        let parsed = mail_parser::MessageParser::default().parse(&data).unwrap();
        let value = parsed
            .header_raw("List-Unsubscribe")
            .unwrap()
            .trim()
            .to_owned();
        let url = value.split('>').next().unwrap().trim_start_matches('<');
        let token = url
            .strip_prefix("https://example.com/outbox/u/")
            .unwrap_or_else(|| panic!("{value}"));
        let read = keys().verify(token).unwrap();
        assert_eq!(
            (read.list.as_str(), read.address.as_str()),
            ("november", "ada@example.net")
        );
        assert!(
            value.contains("<mailto:unsubscribe@example.com?subject=unsubscribe%20"),
            "{value}"
        );
        assert_eq!(
            parsed.header_raw("List-Unsubscribe-Post").map(str::trim),
            Some("List-Unsubscribe=One-Click")
        );
        assert_eq!(
            parsed.header_raw("List-Id").map(str::trim),
            Some("<november.example.com>")
        );
        // The same bytes with one header changed on the way: the verifier refuses them.
        let text = String::from_utf8(data.clone()).unwrap();
        let tampered = text.replacen(
            "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
            "List-Unsubscribe-Post: List-Unsubscribe=Two-Clicks",
            1,
        );
        assert_ne!(tampered, text);
        assert!(
            !verify(dir.path(), tampered.as_bytes(), &signer).valid,
            "{algorithm}: tampered header accepted"
        );
        // A header added on the way that the signature lists as absent fails too.
        let added = text.replacen("\r\n\r\n", "\r\nList-Id: <spoofed.example.com>\r\n\r\n", 1);
        assert!(
            !verify(dir.path(), added.as_bytes(), &signer).valid,
            "{algorithm}: an added List-Id passed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dns_record_is_what_openssl_derives_from_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let pem = rsa_pkcs8(dir.path());
    let signer = DkimSigner::from_pem("Example.com", "s1", &pem).unwrap();
    let out = Command::new("openssl")
        .args(["pkey", "-pubout", "-outform", "der", "-in"])
        .arg(dir.path().join("rsa8.pem"))
        .output()
        .unwrap();
    assert!(out.status.success());
    use base64::Engine as _;
    let expected = base64::engine::general_purpose::STANDARD.encode(&out.stdout);
    assert_eq!(
        signer.dns_record(),
        (
            "s1._domainkey.example.com".to_owned(),
            format!("v=DKIM1; k=rsa; p={expected}")
        )
    );
    let ed = DkimSigner::from_pem("example.com", "ed", &ed25519(dir.path())).unwrap();
    let (_, value) = ed.dns_record();
    assert!(value.starts_with("v=DKIM1; k=ed25519; p="), "{value}");
    assert_eq!(
        value.len(),
        "v=DKIM1; k=ed25519; p=".len() + 44,
        "32 bytes of base64: {value}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sender_domain_gets_its_own_signer_and_raw_emails_are_signed_too() {
    let dir = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let shop = DkimSigner::from_pem("shop.example", "s1", &ed25519(dir.path())).unwrap();
    let news = DkimSigner::from_pem("example.com", "s2", &rsa_pkcs1(dir.path())).unwrap();
    let mailer = mailer(&sink, vec![shop.clone(), news.clone()]);

    // From news@example.com: the example.com signer, aligned.
    let data = delivered(&sink, &mailer, newsletter("bo@example.net")).await;
    assert!(verify(dir.path(), &data, &news).valid);
    assert!(
        !verify(dir.path(), &data, &shop).valid,
        "signed by the other key"
    );

    // A lettre message from a subdomain of shop.example, through the raw handler.
    let db = TestDb::new().await;
    let message = lettre::Message::builder()
        .from("Orders <orders@eu.shop.example>".parse().unwrap())
        .to("cy@example.net".parse().unwrap())
        .subject("Your order")
        .body(String::from("Thanks."))
        .unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let raw = RawEmail::new(message.envelope(), &message.formatted());
    assert!(!raw.enqueue(&mut *tx).await.unwrap().is_duplicate());
    tx.commit().await.unwrap();
    let report = Outbox::new(db.backend())
        .register::<RawEmail, _>(mailer.raw_handler())
        .drain()
        .await
        .unwrap();
    assert_eq!(report.counts.delivered, 1);
    let data = sink.received().last().unwrap().data.clone();
    let verdict = verify(dir.path(), &data, &shop);
    assert!(verdict.valid, "{verdict:?}");
    assert_eq!(verdict.a.as_deref(), Some("ed25519-sha256"));

    // From a domain no signer covers: signed by the first signer (not aligned), still valid.
    let stranger = Email::builder()
        .from("someone@elsewhere.example")
        .to("dee@example.net")
        .subject("Hi")
        .text("Hi.")
        .build()
        .unwrap();
    let data = delivered(&sink, &mailer, stranger).await;
    assert!(verify(dir.path(), &data, &shop).valid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailer_without_unsubscribe_refuses_to_start_with_list_emails_waiting() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let bare = Mailer::new(MailerConfig::smtp(smtp.clone())).unwrap();
    let db = TestDb::new().await;
    let mut tx = db.pool.begin().await.unwrap();
    let receipt = Email::builder()
        .from("shop@example.com")
        .to("ann@example.net")
        .subject("Receipt")
        .text("Thanks.")
        .build()
        .unwrap()
        .enqueue(&mut *tx)
        .await
        .unwrap();
    let queued = newsletter("eve@example.net")
        .enqueue(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let outbox = Outbox::new(db.backend()).register::<Email, _>(bare.handler());
    // The start says what is wrong, before any mail goes out.
    let refused = outbox.drain().await.unwrap_err().to_string();
    assert!(refused.contains("not starting"), "{refused}");
    assert!(refused.contains(queued.id().as_str()), "{refused}");
    assert!(refused.contains("MailerConfig::unsubscribe"), "{refused}");
    assert!(
        refused.contains("\"november\""),
        "names the list: {refused}"
    );
    assert!(sink.received().is_empty(), "nothing reached the server");
    let admin = outbox.admin();
    for id in [receipt.id(), queued.id()] {
        let kept = admin.messages().show(id).await.unwrap().unwrap();
        assert_eq!(kept.message.attempts, 0, "no attempt used");
    }
    // With unsubscribe configured the same queue starts and both go out.
    let mailer = Mailer::new(MailerConfig::smtp(smtp).unsubscribe(unsubscribe())).unwrap();
    let outbox = Outbox::new(db.backend()).register::<Email, _>(mailer.handler());
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, 2);
    assert_eq!(sink.received().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_email_enqueued_after_the_start_without_unsubscribe_is_kept_and_says_why() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let bare = Mailer::new(MailerConfig::smtp(smtp)).unwrap();
    let db = TestDb::new().await;
    let outbox = Outbox::new(db.backend()).register::<Email, _>(bare.handler());
    let admin = outbox.admin();
    let mut waiting = None;
    outbox
        .run_until(async {
            // Enqueued while the workers run: the start check saw an empty queue.
            let mut tx = db.pool.begin().await.unwrap();
            let queued = newsletter("eve@example.net")
                .enqueue(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            for _ in 0..500 {
                let shown = admin.messages().show(queued.id()).await.unwrap().unwrap();
                if shown.message.last_error.is_some() {
                    waiting = Some(shown);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("the list email was not tried within 10 s");
        })
        .await
        .unwrap();
    let waiting = waiting.unwrap();
    assert!(sink.received().is_empty(), "nothing reached the server");
    // Kept, not a dead letter: a misconfigured campaign waits for the fix.
    let dead = admin
        .dead_letters()
        .count(&outbox::DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0);
    let why = waiting.message.last_error.unwrap_or_default();
    assert!(why.contains("MailerConfig::unsubscribe"), "{why}");
    assert_eq!(waiting.message.attempts, 0, "no attempt used");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_with_two_keys_gets_two_signatures_and_a_redirected_list_email_names_its_recipient(
) {
    let dir = tempfile::tempdir().unwrap();
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let ed = DkimSigner::from_pem("example.com", "ed", &ed25519(dir.path())).unwrap();
    let rsa = DkimSigner::from_pem("example.com", "rsa", &rsa_pkcs1(dir.path())).unwrap();
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let mailer = Mailer::new(
        MailerConfig::smtp(smtp)
            .dkim(ed.clone())
            .dkim(rsa.clone())
            .unsubscribe(unsubscribe())
            .test_redirect(TestRedirect::to_address("qa@example.org")),
    )
    .unwrap();
    let data = delivered(&sink, &mailer, newsletter("ada@example.net")).await;
    let text = String::from_utf8(data.clone()).unwrap();
    assert_eq!(text.matches("DKIM-Signature:").count(), 2, "{text}");
    // dkimpy checks the first signature; each key's record verifies its own.
    let first_is_ed = text.find("s=ed").unwrap() < text.find("s=rsa").unwrap();
    let (first, second) = if first_is_ed {
        (&ed, &rsa)
    } else {
        (&rsa, &ed)
    };
    assert!(verify(dir.path(), &data, first).valid);
    // The other signature verifies once the first is taken away.
    let second_only = {
        let start = text.find("DKIM-Signature:").unwrap();
        let next = text[start + 1..].find("DKIM-Signature:").unwrap() + start + 1;
        format!("{}{}", &text[..start], &text[next..])
    };
    assert!(verify(dir.path(), second_only.as_bytes(), second).valid);
    // The redirect sent it to the test address; the token still names the list's recipient.
    assert_eq!(sink.received().last().unwrap().rcpt, ["qa@example.org"]);
    let parsed = mail_parser::MessageParser::default().parse(&data).unwrap();
    let value = parsed
        .header_raw("List-Unsubscribe")
        .unwrap()
        .trim()
        .to_owned();
    let token = value
        .split('>')
        .next()
        .unwrap()
        .trim_start_matches("<https://example.com/outbox/u/");
    assert_eq!(keys().verify(token).unwrap().address, "ada@example.net");
    // A second From added on top breaks both signatures (From is oversigned).
    let added = format!("From: attacker@evil.example\r\n{text}");
    assert!(!verify(dir.path(), added.as_bytes(), first).valid);
}
