//! Guarantees that need real OS processes. The test binary re-runs itself as the worker
//! processes (`child_worker`, ignored unless started with `OUTBOX_CONF_ROLE` set).

use std::{
    collections::HashSet,
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use outbox::{enqueue_many, prelude::*, Retention};

use super::{cases::Mail, harness::Harness};

/// Short leases so a killed worker's messages come back within seconds. (Heartbeats are
/// stored in whole seconds, so a lease of N beats can end after N-1; 3 keeps live but busy
/// workers safe.)
fn quick_lease() -> QueueOptions {
    QueueOptions::new()
        .heartbeat_interval(Duration::from_secs(1))
        .missed_heartbeats(3)
}

/// What a child process does, by `OUTBOX_CONF_ROLE`: `drain` (deliver and record), `hang`
/// (record the start, then never finish), `run` (deliver and record until killed).
pub async fn child<H: Harness>(role: &str, url: &str) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_writer(std::io::stderr)
        .try_init();
    let h = Arc::new(H::attach(url).await);
    let hang = role == "hang";
    // Draining processes keep the default lease: they are alive, only busy.
    let options = if role == "drain" {
        QueueOptions::new()
    } else {
        quick_lease()
    };
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&h))
        .register_with::<Mail, _>(
            move |_: Mail, ctx: MessageContext<Arc<H>>| async move {
                ctx.state().record_delivery(ctx.id().as_str()).await;
                if hang {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                Ok::<(), HandlerError>(())
            },
            options.concurrency(5),
        )
        // Delivered rows are kept, so the test can read their attempts.
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shutdown_timeout(std::time::Duration::from_secs(1));
    match role {
        "drain" => {
            outbox.drain().await.unwrap();
        }
        _ => outbox.run_until(std::future::pending()).await.unwrap(),
    }
}

fn spawn_child(backend: &str, role: &str, url: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_worker",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("OUTBOX_CONF_ROLE", role)
        .env("OUTBOX_CONF_BACKEND", backend)
        .env("OUTBOX_CONF_URL", url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a worker process")
}

async fn enqueue_mails<H: Harness>(h: &H, n: i64) {
    let mails: Vec<Mail> = (0..n).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
}

pub async fn three_processes_deliver_each_exactly_once<H: Harness>() {
    let h = H::new().await;
    enqueue_mails(&h, 5_000).await;
    let started = Instant::now();
    let children: Vec<Child> = (0..3)
        .map(|_| spawn_child(H::NAME, "drain", &h.url()))
        .collect();
    let mut logs = String::new();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "worker process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        logs.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    if !logs.is_empty() {
        println!("worker processes logged:\n{logs}");
    }
    let deliveries = h.deliveries().await;
    let ids: HashSet<&str> = deliveries.iter().map(|d| d.0.as_str()).collect();
    let pids: HashSet<i64> = deliveries.iter().map(|d| d.1).collect();
    println!(
        "{}: 3 processes delivered {} messages ({} distinct) in {:?}; processes that took part: {}",
        H::NAME,
        deliveries.len(),
        ids.len(),
        started.elapsed(),
        pids.len()
    );
    let counts = Outbox::new(h.backend())
        .admin()
        .status_counts()
        .await
        .unwrap();
    assert_eq!(
        ids.len(),
        5_000,
        "every message was delivered; queue: {counts:?}"
    );
    assert_eq!(deliveries.len(), 5_000, "no message was delivered twice");
}

pub async fn killed_workers_messages_are_delivered_by_another<H: Harness>() {
    let h = H::new().await;
    enqueue_mails(&h, 5).await;
    let mut doomed = spawn_child(H::NAME, "hang", &h.url());
    let claimed = async {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if h.deliveries().await.len() == 5 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    assert!(claimed.await, "the first worker never started its messages");
    doomed.kill().expect("SIGKILL the worker mid-handler"); // Child::kill sends SIGKILL on Unix
    doomed.wait().unwrap();
    let killed_at = Instant::now();

    let mut rescuer = spawn_child(H::NAME, "run", &h.url());
    let recovered = async {
        let deadline = Instant::now() + Duration::from_secs(40);
        while Instant::now() < deadline {
            if h.deliveries().await.len() == 10 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    };
    let ok = recovered.await;
    // The rescuer's acks are written in batches after its handlers return: wait until every
    // row counts both the crashed attempt and the rescuer's before stopping it.
    let ids: HashSet<String> = h.deliveries().await.into_iter().map(|d| d.0).collect();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut counted = false;
    while ok && !counted && Instant::now() < deadline {
        let mut all = true;
        for id in &ids {
            all &= h.attempts(id).await >= 2;
        }
        counted = all;
        if !all {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let _ = rescuer.kill();
    let _ = rescuer.wait();
    assert!(
        ok,
        "the killed worker's messages were not delivered by the other worker"
    );
    let deliveries = h.deliveries().await;
    let pids: HashSet<i64> = deliveries.iter().map(|d| d.1).collect();
    assert_eq!(
        pids.len(),
        2,
        "started by the killed worker, delivered by the rescuer"
    );
    println!(
        "{}: 5 messages of a SIGKILLed worker delivered {:?} after the kill",
        H::NAME,
        killed_at.elapsed()
    );
    assert!(
        counted,
        "the crashed attempt and the rescuer's attempt are both counted"
    );
}
