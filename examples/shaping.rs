//! Per-domain traffic shaping: a newsletter goes to gmail.com and to example.org through a
//! small SMTP server on loopback that, like Gmail, answers `421 4.7.28 ... rate limited` to
//! gmail.com recipients that come faster than one per 250 ms. The shipped rule for that
//! reply (here with a faster rate than the shipped one, so the example is quick) slows the
//! `google` site at its first match; the refused mails wait without using attempts and go
//! out at the slowed rate, while example.org gets its mail at full speed. No dead letters.
//!
//! Run it with `cargo run -p outbox-examples --example shaping`. It needs no server (a SQLite file in the
//! system's temp directory, and its own SMTP server) and takes a few seconds.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use outbox::{
    prelude::*,
    smtp::{Email, EmailShaping, Mailer, MailerConfig, SmtpConfig},
    DeadLetterFilter, RuleAction, Shaping, ShapingRule,
};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};

/// Mails to each domain.
const GMAIL: usize = 12;
const OTHER: usize = 40;

/// What the receiver saw: when each domain's mails were accepted, and its refusals.
#[derive(Default)]
struct Receiver {
    accepted: HashMap<String, Vec<Instant>>,
    refused: usize,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The rule's WARN when it slows the site.
    tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_target(false)
        .with_ansi(false)
        .init();
    let path = std::env::temp_dir().join(format!("outbox-shaping-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;

    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let receiver = Arc::new(Mutex::new(Receiver::default()));
    tokio::spawn(serve(listener, Arc::clone(&receiver)));

    // The shipped sites and rules (gmail.com is the `google` site, 5 at a time), with the
    // Gmail rule at 4 per second instead of the shipped 1 per second.
    let gmail_rule = ShapingRule::new(
        "gmail-rate-limited",
        r"\b4\.7\.28\b",
        RuleAction::Slow {
            per_second: 4.0,
            duration: Duration::from_secs(600),
        },
    )?;
    let mailer = Mailer::new(MailerConfig::smtp(SmtpConfig::new("127.0.0.1").port(port)))?;
    let outbox = Outbox::new(SqliteBackend::new(pool.clone()))
        .shaping(Shaping::providers().rule(gmail_rule))
        .register::<Email, _>(mailer.handler());
    outbox.migrate().await?;

    let mut tx = pool.begin().await?;
    for i in 0..GMAIL.max(OTHER) {
        for (domain, n) in [("gmail.com", GMAIL), ("example.org", OTHER)] {
            if i < n {
                let email = Email::builder()
                    .from("News <news@example.com>")
                    .to(format!("reader{i}@{domain}"))
                    .subject("November news")
                    .text("This month's news.")
                    .build()?;
                let _ = email.enqueue(&mut *tx).await?;
            }
        }
    }
    tx.commit().await?;
    println!("{GMAIL} mails to gmail.com and {OTHER} to example.org enqueued.");

    let started = Instant::now();
    let sent = || {
        let r = receiver.lock().unwrap();
        r.accepted.values().map(Vec::len).sum::<usize>()
    };
    let mut result: Result<(), Box<dyn std::error::Error>> = Ok(());
    outbox
        .run_until(async {
            let deadline = Instant::now() + Duration::from_secs(60);
            while sent() < GMAIL + OTHER && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if sent() < GMAIL + OTHER {
                result = Err("not every mail was sent within a minute".into());
            }
        })
        .await?;
    result?;

    let (accepted, refused) = {
        let r = receiver.lock().unwrap();
        (r.accepted.clone(), r.refused)
    };
    for domain in ["example.org", "gmail.com"] {
        let at = &accepted[domain];
        let last = at.iter().max().unwrap().duration_since(started);
        println!(
            "{domain}: {} sent, the last {:.1} s after the start",
            at.len(),
            last.as_secs_f64()
        );
    }
    println!(
        "The receiver refused gmail.com {} time(s) (the mails in flight when the rule slowed the site at its first match); each refused mail waited and went out later.",
        refused
    );
    let admin = outbox.admin();
    for site in admin.shaping().sites().await? {
        if let Some(rate) = site.slow_per_second {
            println!(
                "Site `{}`: slowed to {}/s ({})",
                site.site,
                rate,
                site.reason.unwrap_or_default()
            );
        }
    }
    let counts = outbox.delivery_counts();
    let dead = admin
        .dead_letters()
        .count(&DeadLetterFilter::default())
        .await?;
    println!(
        "delivered {}, deferred without an attempt {}, failed attempts {}, dead letters {dead}",
        counts.delivered, counts.deferred, counts.failed_attempts
    );
    let _ = std::fs::remove_file(&path);
    if dead != 0 || counts.failed_attempts != 0 {
        return Err("a throttled mail used an attempt".into());
    }
    Ok(())
}

/// Serves SMTP sessions until the process ends.
async fn serve(listener: TcpListener, receiver: Arc<Mutex<Receiver>>) {
    while let Ok((tcp, _)) = listener.accept().await {
        tokio::spawn(session(tcp, Arc::clone(&receiver)));
    }
}

/// One SMTP session: just enough of RFC 5321 to take mail, with Gmail's rate limit on
/// gmail.com recipients (the first 3 free, then one per 250 ms).
async fn session(tcp: TcpStream, receiver: Arc<Mutex<Receiver>>) -> std::io::Result<()> {
    let (read, mut write) = tcp.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 mx.test ESMTP\r\n").await?;
    while let Some(line) = lines.next_line().await? {
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        let reply: &[u8] = match verb.as_str() {
            "EHLO" | "HELO" => b"250 mx.test\r\n",
            "RCPT" => {
                let domain = line
                    .rsplit_once('@')
                    .map(|(_, d)| d.trim_end_matches('>').to_ascii_lowercase())
                    .unwrap_or_default();
                let mut r = receiver.lock().unwrap();
                let gmail = r.accepted.get("gmail.com").cloned().unwrap_or_default();
                let too_fast = domain == "gmail.com"
                    && gmail.len() >= 3
                    && gmail
                        .last()
                        .is_some_and(|l| l.elapsed() < Duration::from_millis(250));
                if too_fast {
                    r.refused += 1;
                    b"421 4.7.28 [127.0.0.1] Our system has detected an unusual rate of \
                      unsolicited mail originating from your IP address. To protect our \
                      users from spam, mail sent from your IP address has been rate limited.\r\n"
                } else {
                    // Counted now, so the next recipient sees it.
                    r.accepted
                        .entry(domain.clone())
                        .or_default()
                        .push(Instant::now());
                    b"250 ok\r\n"
                }
            }
            "DATA" => {
                write.write_all(b"354 go ahead\r\n").await?;
                while let Some(data) = lines.next_line().await? {
                    if data == "." {
                        break;
                    }
                }
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
