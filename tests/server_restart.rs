//! Database servers restarted mid-run: the workers ride out the outage (claims, heartbeats
//! and settlements are retried, PostgreSQL's LISTEN reconnects) and every message is
//! delivered, none dead-lettered.
//!
//! These tests restart the machine's own PostgreSQL and MariaDB (as root), so they are `#[ignore]`d in the ordinary suite and run by `.ci/run` on their own,
//! after it: `cargo test --all-features --test server_restart -- --ignored --test-threads=1`.
//! A server that cannot be restarted fails the test with the command that failed.

#[path = "conformance/harness.rs"]
#[allow(unused_imports)]
mod harness;

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

/// Restarts a database server with the shell command `restart`, then waits until `ready`
/// succeeds; fails loudly when either is impossible.
async fn restart(name: &'static str, restart: &'static str, ready: &'static str) {
    let started = Instant::now();
    let sh = |script: &'static str| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("sh")
                .args(["-c", script])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
        })
    };
    let status = sh(restart).await.unwrap().unwrap_or_else(|e| {
        panic!("cannot run `{restart}` ({e}): the restart tests need root and a shell")
    });
    assert!(
        status.success(),
        "`{restart}` failed ({status}); {name} must be restartable for this test"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sh(ready).await.unwrap().is_ok_and(|s| s.success()) {
        assert!(
            Instant::now() < deadline,
            "{name} did not answer `{ready}` within 60 s of `{restart}`; start it again by hand"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{name} restarted and answering after {:?}",
        started.elapsed()
    );
}

/// PostgreSQL: its init script restarts it cleanly.
const PG_RESTART: &str = "service postgresql restart";
const PG_READY: &str = "pg_isready -q -h 127.0.0.1 -p 5432";
/// MariaDB: Debian's init script checks liveness with credentials a test machine may not
/// have, so the server is shut down with the root login (which waits until it has stopped)
/// and started the way the test machine starts it.
const MARIADB_RESTART: &str = "mysqladmin -uroot shutdown && \
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd";
const MARIADB_READY: &str = "mysqladmin -uroot -h 127.0.0.1 -P 3306 --protocol=tcp ping";

async fn restart_mid_run<H: Harness>(
    name: &'static str,
    command: &'static str,
    ready: &'static str,
) {
    const N: i64 = 2_000;
    let h = H::new().await;
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
            restart(name, command, ready).await;
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
#[ignore = "restarts the machine's PostgreSQL; run by .ci/run on its own"]
async fn postgres_restart_mid_run() {
    restart_mid_run::<harness::PostgresHarness>("PostgreSQL", PG_RESTART, PG_READY).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "restarts the machine's MariaDB; run by .ci/run on its own"]
async fn mariadb_restart_mid_run() {
    restart_mid_run::<harness::MySqlHarness>("MariaDB", MARIADB_RESTART, MARIADB_READY).await
}
