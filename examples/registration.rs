//! Event registration: each sign-up saves its row and queues two emails (to the attendee
//! and to the organizer) in ONE transaction; a provider limit of 60 mails per hour with a
//! burst of 5 is shared by both; a cancelled registration's pending mails are dropped.
//!
//! ```sh
//! cargo run -p outbox-examples --example registration        # .eml files in a temp dir
//! cargo run -p outbox-examples --example registration -- "smtp://user:pass@mail.example.com:587" me@example.org
//! ```
//!
//! With a URL (`log://` prints the mails instead) the mails go to that server; the optional second argument redirects every
//! recipient to that address (test mode), so no stranger gets mail from a demo.

use std::{path::PathBuf, sync::Arc};

use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, TestRedirect},
    RateLimit,
};
use sqlx::{SqliteConnection, SqlitePool};

const EVENT: &str = "Rust meetup, 12 March";
const ORGANIZER: &str = "Organizer <organizer@example.com>";
const FROM: &str = "Meetup <events@example.com>";

/// The two mails one registration implies, each idempotent per (registration, kind).
fn mails_for(
    registration: i64,
    name: &str,
    address: &str,
) -> Result<[Email; 2], Box<dyn std::error::Error>> {
    let user = Email::builder()
        .from(FROM)
        .to((name, address))
        .reply_to(ORGANIZER)
        .subject(format!("You are registered: {EVENT}"))
        .text(format!("Hello {name},\n\nsee you at the {EVENT}!"))
        .html(format!(
            "<p>Hello {name},</p><p>see you at the <b>{EVENT}</b>!</p>"
        ))
        .tag("registration.user")
        .meta("registration_id", registration)
        .idempotency_key(format!("registration-{registration}:user"))
        .build()?;
    let organizer = Email::builder()
        .from(FROM)
        .to(ORGANIZER)
        .subject(format!("New registration #{registration}: {name}"))
        .text(format!("{name} <{address}> registered for the {EVENT}."))
        .tag("registration.organizer")
        .meta("registration_id", registration)
        .idempotency_key(format!("registration-{registration}:organizer"))
        .build()?;
    Ok([user, organizer])
}

/// Saves a registration and queues its mails, in the caller's transaction.
async fn register(
    tx: &mut SqliteConnection,
    name: &str,
    address: &str,
) -> Result<i64, Box<dyn std::error::Error>> {
    let id: i64 =
        sqlx::query_scalar("INSERT INTO registrations (name, email) VALUES (?, ?) RETURNING id")
            .bind(name)
            .bind(address)
            .fetch_one(&mut *tx)
            .await?;
    for mail in mails_for(id, name, address)? {
        let _ = mail.enqueue(&mut *tx).await?;
    }
    Ok(id)
}

/// The orphan check: an email about a registration that no longer exists is dropped.
async fn still_registered(mail: Email, pool: Arc<SqlitePool>) -> Result<bool, sqlx::Error> {
    let Some(id) = mail.meta("registration_id") else {
        return Ok(true);
    };
    let found: Option<i64> = sqlx::query_scalar("SELECT id FROM registrations WHERE id = ?")
        .bind(id)
        .fetch_optional(&*pool)
        .await?;
    Ok(found.is_some())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One JSON line per send (`email sent`, with the outbox id and the Message-ID, a DEBUG
    // line), and per failed attempt; `log://` prints each mail here. RUST_LOG=info shows
    // the outbox's own lines too (a summary per type every minute while work flows).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "warn,outbox_smtp=debug".into());
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .init();
    let dir = std::env::temp_dir().join(format!("outbox-registration-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mail_dir = dir.join("mail");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config = match args.first() {
        Some(url) => MailerConfig::from_url(url)?,
        None => MailerConfig::file(&mail_dir),
    };
    if let Some(me) = args.get(1) {
        config = config.test_redirect(TestRedirect::to_address(me));
    }
    let mailer = Mailer::new(config)?;
    println!("Mail goes to: {}", mailer.config()); // the password shows as ***

    let db = dir.join("app.db");
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", db.display())).await?;
    let outbox = Outbox::with_state(SqliteBackend::new(pool.clone()), pool.clone())
        .rate_limit("smtp", RateLimit::per_hour(60.0).burst(5))
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().rate_limit("smtp"))
        .orphan_check(still_registered);
    outbox.migrate().await?;
    sqlx::query("CREATE TABLE registrations (id INTEGER PRIMARY KEY, name TEXT, email TEXT)")
        .execute(&pool)
        .await?;

    println!("\n1. Four people register; each registration and its two mails commit together.");
    let mut ids = Vec::new();
    for (name, address) in [
        ("Ada", "ada@example.com"),
        ("Bob", "bob@example.com"),
        ("Carol", "carol@example.com"),
        ("Dan", "dan@example.com"),
    ] {
        let mut tx = pool.begin().await?;
        ids.push(register(&mut tx, name, address).await?);
        tx.commit().await?;
        println!(
            "   registration #{} ({name}): 2 mails queued",
            ids.last().unwrap()
        );
    }

    println!("2. Ada's confirmation is queued again (a retried request): duplicates are skipped.");
    let mut tx = pool.begin().await?;
    for mail in mails_for(ids[0], "Ada", "ada@example.com")? {
        let result = mail.enqueue(&mut *tx).await?;
        println!(
            "   {:?}: duplicate = {}",
            mail.idempotency_key.as_deref().unwrap_or(""),
            result.is_duplicate()
        );
    }
    tx.commit().await?;

    println!(
        "3. Carol cancels before anything was sent: her row is deleted, her mails become orphans."
    );
    sqlx::query("DELETE FROM registrations WHERE id = ?")
        .bind(ids[2])
        .execute(&pool)
        .await?;

    println!("4. Delivering what is due (60 mails/hour, burst 5, shared by both kinds):");
    let report = outbox.drain().await?;
    println!(
        "   in {:?}: {} sent, {} orphans dropped, {} waiting for the rate limit, {} failed attempts, {} given up",
        report.elapsed,
        report.counts.delivered,
        report.counts.orphaned,
        report.counts.deferred,
        report.counts.failed_attempts,
        report.counts.given_up
    );
    for t in outbox.admin().status_counts().await? {
        println!(
            "   queue {}: {} done, {} scheduled for later, {} pending, {} dead",
            t.type_tag, t.done, t.scheduled, t.pending, t.dead
        );
    }
    if report.counts.deferred > 0 {
        println!("   the bucket is empty now: the next mail is due in about a minute (a later drain or `run` sends it)");
    }
    show_files(&mail_dir)?;
    pool.close().await;
    mailer.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Lists the `.eml` files the dev transport wrote, with their recipient and subject.
fn show_files(dir: &PathBuf) -> std::io::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    println!(
        "\nFiles written to {} (one per message, named by its id):",
        dir.display()
    );
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let header = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        println!(
            "   {}  To: {}  Subject: {}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            header("To:"),
            header("Subject:")
        );
    }
    Ok(())
}
