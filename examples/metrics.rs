//! Metrics and traces: an outbox on a SQLite file, a Prometheus exporter on
//! `127.0.0.1:9464/metrics`, and the outbox's log as JSON lines (one per failed attempt,
//! dead letter, …; `RUST_LOG=outbox_core=debug` adds one per delivery).
//!
//! ```sh
//! cargo run -p outbox-examples --example metrics             # drain 20 signups, print the exporter's text, exit
//! cargo run -p outbox-examples --example metrics -- --serve  # … and keep serving /metrics until Ctrl-C
//! ```
//!
//! Of the 20 signups, every fifth is refused for good (a dead letter) and every third
//! other one fails its first attempt (retried at once): 20 enqueued, 16 delivered,
//! 5 retried, 4 dead-lettered.

use std::{net::SocketAddr, path::Path, time::Duration};

use metrics_exporter_prometheus::PrometheusBuilder;
use outbox::{prelude::*, DrainReport};
use serde::{Deserialize, Serialize};

/// A signup mail; `n` decides how its handler behaves in this demo.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "signup_mail", key(n))]
pub struct SignupMail {
    /// The signup's number.
    pub n: u32,
}

async fn send(mail: SignupMail, ctx: MessageContext) -> Result<(), HandlerError> {
    if mail.n % 5 == 0 {
        return Err(HandlerError::permanent("550 5.1.1 mailbox unknown"));
    }
    if mail.n % 3 == 0 && ctx.attempt() == 1 {
        return Err(HandlerError::retry("451 4.7.1 try again later"));
    }
    Ok(())
}

/// Installs the Prometheus exporter (an HTTP listener on `listen`) as the global
/// recorder, enqueues 20 signups into the SQLite file at `db` and drains them.
pub async fn demo(
    db: &Path,
    listen: SocketAddr,
) -> Result<DrainReport, Box<dyn std::error::Error>> {
    PrometheusBuilder::new()
        .with_http_listener(listen)
        .install()?;
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", db.display())).await?;
    let outbox = Outbox::new(SqliteBackend::new(pool.clone())).register_with::<SignupMail, _>(
        send,
        QueueOptions::new().retry(RetrySchedule::fixed([Duration::ZERO])),
    );
    outbox.migrate().await?;
    let mut tx = pool.begin().await?;
    let mails: Vec<SignupMail> = (1..=20).map(|n| SignupMail { n }).collect();
    outbox::enqueue_many(&mut *tx, &mails).await?;
    tx.commit().await?;
    Ok(outbox.drain().await?)
}

/// The exporter's text at `listen`, read over plain HTTP.
pub async fn scrape(listen: SocketAddr) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(listen).await?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await?;
    let mut response = String::new();
    conn.read_to_string(&mut response).await?;
    Ok(response
        .split_once("\r\n\r\n")
        .map_or(response.clone(), |(_, body)| body.to_owned()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .with_span_list(false)
        .init();
    let dir = tempfile::tempdir()?;
    let serve = std::env::args().any(|a| a == "--serve");
    // The exporter's usual port when serving; any free port for a one-off run.
    let listen: SocketAddr = if serve {
        "127.0.0.1:9464".parse()?
    } else {
        std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?
    };
    let report = demo(&dir.path().join("metrics.db"), listen).await?;
    println!("drained: {:?}", report.counts);
    // The exporter renders on request; give its listener a moment to start.
    tokio::time::sleep(Duration::from_millis(100)).await;
    print!("{}", scrape(listen).await?);
    if serve {
        println!("serving http://{listen}/metrics until Ctrl-C");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}
