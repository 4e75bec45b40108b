//! A sports club on a cheap host: members sign up on the website, each sign-up sends two
//! mails (a welcome to the member, a note to the secretary), the host allows 60 mails an
//! hour, and there is no daemon — a cron job runs `outbox drain --while-tokens` (here:
//! `DrainOptions::until_limited`) every minute, sends what the limit allows and exits. A
//! member who withdraws before their mails went out gets none (orphan check), and in test
//! mode every mail goes to the club's own test address.
//!
//! Run it with `cargo run -p outbox-examples --example club`. It needs no server (a SQLite file and a capture
//! mailer, printed at the end; set `MAIL_URL` to send through a real server) and takes
//! about a second: a manual clock stands in for the minutes between cron runs.

use std::{sync::Arc, time::Duration};

use outbox::{
    clock::ManualClock,
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, TestRedirect},
    DrainOptions, Relevance,
};
use sqlx::{SqliteConnection, SqlitePool};

const FROM: &str = "FC Example <club@example.com>";
const SECRETARY: &str = "Secretary <secretary@example.com>";

/// The two mails of sign-up `id`; each has its own idempotency key, so a double submit
/// sends nothing twice.
fn mails(id: i64, name: &str, address: &str) -> Result<[Email; 2], outbox::InvalidMessage> {
    let welcome = Email::builder()
        .from(FROM)
        .to((name, address))
        .subject("Welcome to FC Example")
        .text(format!("Hello {name}, training is on Tuesdays at 7 pm."))
        .meta("member", id)
        .idempotency_key(format!("member-{id}:welcome"))
        .build()?;
    let note = Email::builder()
        .from(FROM)
        .to(SECRETARY)
        .subject(format!("New member #{id}: {name}"))
        .text(format!("{name} <{address}> signed up."))
        .meta("member", id)
        .idempotency_key(format!("member-{id}:secretary"))
        .build()?;
    Ok([welcome, note])
}

/// The website's sign-up: the member's row and both mails, in one transaction.
async fn sign_up(
    tx: &mut SqliteConnection,
    name: &str,
    address: &str,
) -> Result<i64, Box<dyn std::error::Error>> {
    let id: i64 =
        sqlx::query_scalar("INSERT INTO members (name, email) VALUES (?, ?) RETURNING id")
            .bind(name)
            .bind(address)
            .fetch_one(&mut *tx)
            .await?;
    for mail in mails(id, name, address)? {
        if mail.enqueue(&mut *tx).await?.is_duplicate() {
            println!("   (already queued for member {id})");
        }
    }
    Ok(id)
}

/// The orphan check: a mail about a member who withdrew is dropped unsent.
async fn still_a_member(email: Email, pool: Arc<SqlitePool>) -> Result<Relevance, sqlx::Error> {
    let Some(id) = email
        .metadata
        .get("member")
        .and_then(|v| v.parse::<i64>().ok())
    else {
        return Ok(Relevance::Relevant);
    };
    let found: Option<i64> = sqlx::query_scalar("SELECT id FROM members WHERE id = ?")
        .bind(id)
        .fetch_optional(&*pool)
        .await?;
    Ok(match found {
        Some(_) => Relevance::Relevant,
        None => Relevance::Orphan(format!("member {id} withdrew")),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("outbox-club-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let pool =
        outbox::sqlite::connect(&format!("sqlite://{}", dir.join("club.db").display())).await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS members (id INTEGER PRIMARY KEY, name TEXT, email TEXT)",
    )
    .execute(&pool)
    .await?;
    // Test mode: every mail goes to the club's own address, whoever it was for.
    let config = match std::env::var("MAIL_URL") {
        Ok(url) => MailerConfig::from_url(&url)?,
        Err(_) => MailerConfig::capture(),
    };
    let mailer = Mailer::new(config.test_redirect(TestRedirect::to_address("test@example.com")))?;
    let clock = ManualClock::new(std::time::SystemTime::now());
    let outbox = Outbox::with_state(SqliteBackend::new(pool.clone()), pool.clone())
        .clock(Arc::new(clock.clone()))
        // The host's limit, 60 an hour, with a burst of 3 for the first minute.
        .rate_limit("host", RateLimit::per_hour(60.0).burst(3))
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().rate_limit("host"))
        .orphan_check(|email: Email, pool| still_a_member(email, pool));
    outbox.migrate().await?;

    println!("1. Three members sign up (six mails); Carl withdraws before the next cron run.");
    let mut carl = 0;
    for (name, address) in [
        ("Ada", "ada@example.com"),
        ("Bob", "bob@example.com"),
        ("Carl", "carl@example.com"),
    ] {
        let mut tx = pool.begin().await?;
        let id = sign_up(&mut tx, name, address).await?;
        tx.commit().await?;
        if name == "Carl" {
            carl = id;
        }
    }
    sqlx::query("DELETE FROM members WHERE id = ?")
        .bind(carl)
        .execute(&pool)
        .await?;

    println!("2. Cron runs every minute; each run sends what the limit allows and exits.");
    let mut sent = 0;
    for minute in 0..4 {
        let report = outbox.drain_with(DrainOptions::until_limited()).await?;
        sent += report.counts.delivered;
        println!(
            "   minute {minute}: sent {}, dropped {} (withdrawn), done in {:?}",
            report.counts.delivered, report.counts.orphaned, report.elapsed
        );
        // The next minute's run (and a second: this run's own milliseconds count too).
        clock.advance(Duration::from_secs(61));
    }
    println!("3. {sent} mails sent in all, every one to the test address:");
    for mail in mailer.sent() {
        println!(
            "   to {:?} (for {}): {}",
            mail.to,
            mail.header("X-Outbox-Original-To").unwrap_or_default(),
            mail.header("Subject").unwrap_or_default()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if sent != 4 {
        return Err(format!("expected 4 mails (Carl's two dropped), sent {sent}").into());
    }
    Ok(())
}
