//! An SMTP outage and the circuit breaker: mail goes out through a small SMTP server on
//! loopback, the server goes down for 5 s, and the breaker holds the mail instead of
//! spending its attempts; the log shows the breaker's two lines (a WARN when it opens, an
//! INFO when it closes) and every mail goes out once the server is back.
//!
//! Run it with `cargo run -p outbox-examples --example outage`. It needs no server (a SQLite file in the
//! system's temp directory, and its own SMTP server) and takes about ten seconds.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SmtpConfig},
};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};

/// How long the SMTP server is down.
const OUTAGE: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The breaker's lines (and the rest of the outbox's WARNs) on stderr.
    tracing_subscriber::fmt()
        .with_env_filter("warn,outbox_core::layers::breaker=info")
        .with_target(false)
        .with_ansi(false)
        .init();
    let path = std::env::temp_dir().join(format!("outbox-outage-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;

    // The relay: a minimal SMTP server on loopback that counts what it accepts.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let server = tokio::spawn(serve(listener, Arc::clone(&accepted)));

    let mailer = Mailer::new(MailerConfig::smtp(SmtpConfig::new("127.0.0.1").port(port)))?;
    println!(
        "The mailer's breaker is named {:?}.",
        mailer.downstream().unwrap()
    );
    let outbox =
        Outbox::new(SqliteBackend::new(pool.clone())).register::<Email, _>(mailer.handler());
    outbox.migrate().await?;
    let admin = outbox.admin();

    let story = async {
        enqueue(&pool, 0..5).await?;
        wait_for("the first 5 mails", || accepted.load(Ordering::SeqCst) == 5).await?;
        println!("1. 5 mails sent. The SMTP server goes down for {OUTAGE:?}; 20 more mails are enqueued.");
        server.abort();
        let down = Instant::now();
        enqueue(&pool, 5..25).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        for b in admin.breakers().await? {
            println!(
                "2. Breaker {}: open = {}, reason = {:?}; the mails wait without using attempts.",
                b.name,
                b.is_open(),
                b.reason.unwrap_or_default()
            );
        }
        tokio::time::sleep(OUTAGE.saturating_sub(down.elapsed())).await;
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let back = Instant::now();
        println!("3. The server is back; the next probe (1 s, 3 s, 7 s … after the opening) gets through.");
        tokio::spawn(serve(listener, Arc::clone(&accepted)));
        wait_for("all 25 mails", || accepted.load(Ordering::SeqCst) == 25).await?;
        println!(
            "4. All 25 mails sent, the last {:?} after the server came back.",
            back.elapsed()
        );
        let counts = outbox.delivery_counts();
        println!(
            "   delivered {}, failed attempts {} (the ones that met the outage, and the probes), dead letters {}",
            counts.delivered, counts.failed_attempts, counts.given_up
        );
        if counts.given_up != 0 {
            return Err::<(), Box<dyn std::error::Error>>("a mail was given up".into());
        }
        Ok(())
    };
    let mut result = Ok(());
    outbox
        .run_until(async {
            result = story.await;
        })
        .await?;
    let _ = std::fs::remove_file(&path);
    result
}

/// Enqueues mails `range` in one transaction.
async fn enqueue(
    pool: &sqlx::SqlitePool,
    range: std::ops::Range<usize>,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut tx = pool.begin().await?;
    for i in range {
        let email = Email::builder()
            .from("Shop <shop@example.com>")
            .to(format!("customer{i}@example.com"))
            .subject(format!("Your order #{i}"))
            .text("Thanks for your order.")
            .build()?;
        let _ = email.enqueue(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Waits (up to a minute) until `done` says so; an error naming `what` if it does not.
async fn wait_for(what: &str, done: impl Fn() -> bool) -> Result<(), Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        if Instant::now() >= deadline {
            return Err(format!("{what} were not sent within a minute").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Serves SMTP sessions until aborted (which closes the listener: connections are refused).
async fn serve(listener: TcpListener, accepted: Arc<AtomicUsize>) {
    let mut sessions = tokio::task::JoinSet::new();
    while let Ok((tcp, _)) = listener.accept().await {
        sessions.spawn(session(tcp, Arc::clone(&accepted)));
    }
}

/// One SMTP session: just enough of RFC 5321 to take mail.
async fn session(tcp: TcpStream, accepted: Arc<AtomicUsize>) -> std::io::Result<()> {
    let (read, mut write) = tcp.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 relay.test ESMTP\r\n").await?;
    while let Some(line) = lines.next_line().await? {
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250 relay.test\r\n",
            "DATA" => {
                write.write_all(b"354 go ahead\r\n").await?;
                while let Some(data) = lines.next_line().await? {
                    if data == "." {
                        break;
                    }
                }
                accepted.fetch_add(1, Ordering::SeqCst);
                b"250 queued\r\n"
            }
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => b"250 ok\r\n",
        };
        write.write_all(reply).await?;
    }
    Ok(())
}
