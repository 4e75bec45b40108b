//! Deliverability end to end, on the embedded SQLite default: a newsletter is signed with
//! DKIM and carries one-click unsubscribe headers; one reader clicks unsubscribe (a POST to
//! the endpoint), the other's address hard-bounces (a provider webhook, here Postmark's);
//! the next issue to both is recorded as suppressed and nothing is sent.
//!
//! Run it with `cargo run -p outbox-examples --example deliverability`. It needs
//! `openssl` on the PATH to make the example's DKIM key (in production the key comes from
//! your secret store, and its public half is published in DNS).

use std::{error::Error, net::SocketAddr, process::Command};

use base64::Engine as _;
use outbox::{
    prelude::*,
    smtp::{DkimSigner, Email, Mailer, MailerConfig, Unsubscribe, UnsubscribeKeys},
    web::{axum, UnsubscribeEndpoint, Webhooks},
    SqliteBackend, SuppressionFilter,
};

const BASE: &str = "https://news.example.com/u/";

fn issue(to: &str, n: u32) -> Result<Email, Box<dyn Error>> {
    Ok(Email::builder()
        .from("News <news@example.com>")
        .to(to)
        .subject(format!("Issue {n}"))
        .text("This month's news.")
        .list("newsletter")
        .build()?)
}

/// POSTs `body` to the local server; the status code.
async fn post(
    addr: SocketAddr,
    path: &str,
    body: String,
    auth: Option<String>,
) -> Result<u16, Box<dyn Error>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
    tokio::spawn(connection);
    let mut request = hyper::Request::post(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json");
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let body = http_body_util::Full::new(axum::body::Bytes::from(body));
    Ok(sender
        .send_request(request.body(body)?)
        .await?
        .status()
        .as_u16())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("outbox-deliverability-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let key_file = dir.join("dkim.pem");
    let made = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key_file)
        .status()?;
    assert!(made.success(), "openssl genpkey failed");
    let signer = DkimSigner::from_pem_file("example.com", "news2026", &key_file)?;
    let (record, value) = signer.dns_record();
    println!("publish in DNS: {record} TXT \"{value}\"");

    // The mailer signs every email and gives list emails one-click unsubscribe headers. The
    // capture transport keeps what it would send, so the example needs no SMTP server.
    let keys = UnsubscribeKeys::new("2026-11", [42u8; 32])?; // 32 random bytes in production
    let mailer = Mailer::new(
        MailerConfig::capture()
            .dkim(signer)
            .unsubscribe(Unsubscribe::new(BASE, keys.clone())?),
    )?;
    let pool =
        outbox::sqlite::connect(&format!("sqlite://{}", dir.join("outbox.db").display())).await?;
    let backend = SqliteBackend::new(pool.clone());
    let outbox = Outbox::new(backend.clone()).register::<Email, _>(mailer.handler());
    outbox.migrate().await?;
    let admin = Admin::new(backend.clone());

    let mut tx = pool.begin().await?;
    for to in ["ann@example.net", "bob@example.org"] {
        let _ = issue(to, 1)?.enqueue(&mut *tx).await?;
    }
    tx.commit().await?;
    let report = outbox.drain().await?;
    let sent = mailer.sent();
    println!("issue 1: {} sent", report.counts.delivered);
    let ann = sent
        .iter()
        .find(|s| s.to == ["ann@example.net"])
        .expect("ann's copy");
    let text = String::from_utf8_lossy(&ann.data).replace("\r\n ", " ");
    let header = |name: &str| {
        text.lines()
            .find(|l| l.to_ascii_lowercase().starts_with(name))
            .unwrap_or_default()
            .to_owned()
    };
    println!("  {}…", &header("dkim-signature:")[..60]);
    println!("  {}", header("list-unsubscribe-post:"));
    let unsubscribe = header("list-unsubscribe:");
    let start = unsubscribe.find(BASE).expect("the one-click URL") + BASE.len();
    let token = &unsubscribe[start..start + unsubscribe[start..].find('>').expect("URL end")];

    // The endpoints the outside world reaches: one-click unsubscribe and a provider webhook.
    let app = axum::Router::new()
        .nest(
            "/u",
            UnsubscribeEndpoint::new(admin.clone(), keys).into_router(),
        )
        .nest(
            "/hooks",
            Webhooks::new(admin.clone())
                .postmark("postmark", "hook-secret")
                .into_router(),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    // Ann's mail client POSTs the one-click URL; Postmark reports Bob's address as gone.
    let clicked = post(
        addr,
        &format!("/u/{token}"),
        "List-Unsubscribe=One-Click".into(),
        None,
    )
    .await?;
    println!("one-click unsubscribe of ann@example.net: {clicked}");
    let bounce = serde_json::json!({
        "RecordType": "Bounce", "ID": 4711, "Type": "HardBounce", "Email": "bob@example.org",
        "Description": "The recipient's mailbox does not exist",
    });
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("postmark:hook-secret")
    );
    let bounced = post(addr, "/hooks/postmark", bounce.to_string(), Some(auth)).await?;
    println!("Postmark hard bounce of bob@example.org: {bounced}");
    for s in admin
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await?
    {
        println!("  suppressed {} ({}, {})", s.address, s.scope, s.reason);
    }

    // Issue 2 to both: recorded as suppressed at enqueue; nothing is sent.
    let mut tx = pool.begin().await?;
    for to in ["ann@example.net", "bob@example.org"] {
        let _ = issue(to, 2)?.enqueue(&mut *tx).await?;
    }
    tx.commit().await?;
    let report = outbox.drain().await?;
    let counts = admin.status_counts().await?;
    let email = counts
        .iter()
        .find(|c| c.type_tag == "outbox.email")
        .expect("counted");
    println!(
        "issue 2: {} sent, {} suppressed",
        report.counts.delivered, email.suppressed
    );
    for m in admin.suppressions().stopped_messages(10).await? {
        println!("  {} {}", m.id, m.reason);
    }
    std::fs::remove_dir_all(&dir).ok();
    if (
        clicked,
        bounced,
        report.counts.delivered,
        email.suppressed,
        mailer.sent().len(),
    ) != (200, 200, 0, 2, 2)
    {
        return Err("the example did not end as expected".into());
    }
    Ok(())
}
