//! Database servers restarted mid-run: the workers ride out the outage (claims, heartbeats
//! and settlements are retried, PostgreSQL's LISTEN reconnects) and every message is
//! delivered, none dead-lettered.
//!
//! Each test starts a private server of its own (`common/servers.rs`: a temporary directory,
//! a free port) and restarts that one, never a server the rest of the suite uses.

#[path = "conformance/harness.rs"]
#[allow(unused_imports)]
mod harness;
#[path = "common/servers.rs"]
mod servers;

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use harness::Harness;
use outbox::{enqueue_many, prelude::*, DeadLetterFilter};
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "restart.mail", max_attempts = 100)]
struct Mail {
    n: i64,
}

type Seen = Arc<Mutex<HashSet<i64>>>;

async fn deliver(m: Mail, ctx: MessageContext<Seen>) -> Result<(), HandlerError> {
    tokio::time::sleep(Duration::from_millis(2)).await; // a short SMTP-like call
    ctx.state().lock().unwrap().insert(m.n);
    Ok(())
}

/// A private server a test may restart.
trait Restartable: Send + 'static {
    fn url(&self) -> String;
    /// Stops the server and starts it again on the same port and data (blocking).
    fn restart(&mut self);
}

impl Restartable for servers::PrivatePostgres {
    fn url(&self) -> String {
        servers::PrivatePostgres::url(self)
    }
    fn restart(&mut self) {
        servers::PrivatePostgres::restart(self)
    }
}

impl Restartable for servers::PrivateMariaDb {
    fn url(&self) -> String {
        servers::PrivateMariaDb::url(self)
    }
    fn restart(&mut self) {
        servers::PrivateMariaDb::restart(self)
    }
}

async fn restart_mid_run<H: Harness, S: Restartable>(name: &'static str, server: S) {
    const N: i64 = 2_000;
    let h = H::attach(&server.url()).await;
    Outbox::new(h.backend()).migrate().await.expect("migrate");
    let mut server = Some(server);
    let mut tx = h.pool().begin().await.unwrap();
    let mails: Vec<Mail> = (0..N).map(|n| Mail { n }).collect();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    let seen: Seen = Arc::default();
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&seen)).register_with::<Mail, _>(
        deliver,
        QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(500)])),
    );
    let count = || seen.lock().unwrap().len() as i64;
    outbox
        .run_until(async {
            while count() < N / 5 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let before = count();
            // A connection opened before the restart: it must be cut, or nothing restarted.
            let mut held = h.pool().acquire().await.unwrap();
            let started = Instant::now();
            let mut restarting = server.take().unwrap();
            server = Some(
                tokio::task::spawn_blocking(move || {
                    restarting.restart();
                    restarting
                })
                .await
                .unwrap(),
            );
            println!(
                "{name} restarted and answering after {:?}",
                started.elapsed()
            );
            assert!(
                sqlx::Connection::ping(&mut *held).await.is_err(),
                "{name}: a connection from before the restart still answers; the server did not restart"
            );
            held.close_on_drop();
            println!("{}: {before} of {N} delivered before the restart", H::NAME);
            let deadline = Instant::now() + Duration::from_secs(120);
            while count() < N && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .unwrap();
    assert_eq!(
        count(),
        N,
        "{}: every message delivered after the restart",
        H::NAME
    );
    let dead = outbox
        .admin()
        .dead_letters()
        .count(&DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0, "{}: no dead letter from the outage", H::NAME);
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.count_messages("restart.mail").await > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        h.count_messages("restart.mail").await,
        0,
        "{}: every delivery recorded",
        H::NAME
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restart_mid_run() {
    let server = tokio::task::spawn_blocking(servers::PrivatePostgres::start)
        .await
        .unwrap();
    restart_mid_run::<harness::PostgresHarness, _>("PostgreSQL", server).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_restart_mid_run() {
    let server = tokio::task::spawn_blocking(servers::PrivateMariaDb::start)
        .await
        .unwrap();
    restart_mid_run::<harness::MySqlHarness, _>("MariaDB", server).await
}
