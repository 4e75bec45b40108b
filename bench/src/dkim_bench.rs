//! What DKIM signing costs per email: the same emails rendered and handed to the in-memory
//! capture transport, unsigned (the baseline, measured in the same run), signed with an
//! Ed25519 key and signed with an RSA-2048 key. One task, so the figures are one core's.
//!
//! ```sh
//! cargo run --release -p outbox-bench --features dkim --bin dkim_bench -- [emails]
//! ```
//!
//! The keys are made by `openssl` at the start. Figures: emails per second and the added
//! cost per email in microseconds.

use std::{process::Command, time::Instant};

use outbox::{
    smtp::{DkimSigner, Email, Mailer, MailerConfig},
    MessageId,
};

fn email(i: usize) -> Email {
    Email::builder()
        .from("News <news@example.com>")
        .to(format!("user{i}@example.net"))
        .subject(format!("Our newsletter, issue {i}"))
        .text("A newsletter paragraph of ordinary length, written for the benchmark.\n".repeat(40))
        .html(
            "<p>A newsletter paragraph of ordinary length, written for the benchmark.</p>\n"
                .repeat(40),
        )
        .build()
        .expect("valid email")
}

fn key(args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("key.pem");
    let status = Command::new("openssl")
        .arg(args[0])
        .arg("-out")
        .arg(&path)
        .args(&args[1..])
        .status()
        .expect("openssl must be installed");
    assert!(status.success());
    std::fs::read_to_string(path).expect("key file")
}

/// Emails per second through `config` (capture transport), `total` emails.
async fn rate(config: MailerConfig, total: usize) -> f64 {
    let mailer = Mailer::new(config).expect("config");
    let emails: Vec<Email> = (0..total).map(email).collect();
    let started = Instant::now();
    for (i, e) in emails.iter().enumerate() {
        let id = MessageId::from_string(format!("01BENCH{i:019}"));
        mailer.deliver(e, &id, "outbox.email").await.expect("send");
    }
    total as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let total: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("emails: a number"))
        .unwrap_or(5_000);
    let ed = DkimSigner::from_pem(
        "example.com",
        "ed",
        &key(&["genpkey", "-algorithm", "ed25519"]),
    )
    .expect("ed25519 key");
    let rsa =
        DkimSigner::from_pem("example.com", "rsa", &key(&["genrsa", "2048"])).expect("rsa key");
    // Warm-up: allocator and code paths.
    rate(MailerConfig::capture(), 200).await;
    let unsigned = rate(MailerConfig::capture(), total).await;
    let ed25519 = rate(MailerConfig::capture().dkim(ed), total).await;
    let rsa2048 = rate(MailerConfig::capture().dkim(rsa), total).await;
    let added = |signed: f64| 1e6 / signed - 1e6 / unsigned;
    println!("DKIM signing, {total} emails of ~6 KiB, one task (capture transport)");
    println!("  unsigned (baseline)  {unsigned:>9.0} emails/s");
    println!(
        "  Ed25519              {ed25519:>9.0} emails/s  {:>6.1} µs added per email  ({:.2}× baseline time)",
        added(ed25519),
        unsigned / ed25519
    );
    println!(
        "  RSA-2048             {rsa2048:>9.0} emails/s  {:>6.1} µs added per email  ({:.2}× baseline time)",
        added(rsa2048),
        unsigned / rsa2048
    );
}
