//! Guarantees that need real OS processes. The test binary re-runs itself as the worker
//! processes (`child_worker`, ignored unless started with `OUTBOX_CONF_ROLE` set).

use std::{
    collections::HashSet,
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use outbox::{enqueue_many, prelude::*, RateLimit, Retention};

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
    let level = match role {
        "slow-statement" => "debug",
        // The breaker's own lines: WARN when it opens, INFO when it closes.
        "outage" => "warn,outbox_core=info",
        _ => "warn",
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(level)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
    if role == "slow-statement" {
        return super::cases::slow_statement_child::<H>(url).await;
    }
    let h = Arc::new(H::attach(url).await);
    if role == "skew" {
        return skewed_child(h).await;
    }
    if role == "group" {
        return super::groups::group_child(h).await;
    }
    if role == "slow-group" {
        return super::groups::slow_group_child(h).await;
    }
    if role == "select" {
        return super::fan_out::select_child(&*h).await;
    }
    if role == "outage" {
        return super::outage::outage_child(h).await;
    }
    if role == "ordered" {
        return super::ordering::ordered_child(h).await;
    }
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

/// What a child process that ran to its end left: its exit status and its log lines.
pub struct ChildRun {
    pub status: std::process::ExitStatus,
    pub logs: String,
}

/// Runs a child process in `role` to its end.
pub fn run_child(backend: &str, role: &str, url: &str) -> ChildRun {
    let out = child_command(backend, role, url)
        .output()
        .expect("run a child process");
    ChildRun {
        status: out.status,
        logs: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub(super) fn spawn_child(backend: &str, role: &str, url: &str) -> Child {
    spawn_child_with(backend, role, url, &[])
}

/// Starts a child process in `role` with extra environment variables.
pub(super) fn spawn_child_with(
    backend: &str,
    role: &str,
    url: &str,
    env: &[(&str, &str)],
) -> Child {
    child_command(backend, role, url)
        .envs(env.iter().copied())
        .spawn()
        .expect("start a worker process")
}

fn child_command(backend: &str, role: &str, url: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
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
        .stderr(Stdio::piped());
    command
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

/// libfaketime, which shifts a process's wall clock (Debian's `faketime` package).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// A worker process whose wall clock is off by `offset` ("-60", "+60": seconds), its
/// monotonic clock untouched.
fn spawn_skewed(backend: &str, url: &str, offset: &str) -> Child {
    child_command(backend, "skew", url)
        .env("LD_PRELOAD", LIBFAKETIME)
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .spawn()
        .expect("start a worker process with a skewed clock")
}

/// The worker of the clock-skew case: records its own clock beside the database's, then
/// delivers `conf.mail` under the shared bucket `conf.skew`, each handler taking 1.5 s so
/// leases (3 s) must be extended by heartbeats, until killed.
async fn skewed_child<H: Harness>(h: Arc<H>) {
    let local = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    h.record_clock(local).await;
    let outbox = Outbox::with_state(h.backend(), Arc::clone(&h))
        .register_with::<Mail, _>(
            |_: Mail, ctx: MessageContext<Arc<H>>| async move {
                ctx.state().record_delivery(ctx.id().as_str()).await;
                tokio::time::sleep(Duration::from_millis(1500)).await;
                Ok::<(), HandlerError>(())
            },
            quick_lease().concurrency(5).rate_limit("conf.skew"),
        )
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shutdown_timeout(Duration::from_secs(1));
    outbox.run_until(std::future::pending()).await.unwrap();
}

async fn wait_for(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within {limit:?}");
}

/// Two worker processes whose clocks run 60 s behind and 60 s ahead of the enqueuing
/// process agree with it, because due times, leases, rescue and bucket refills are the
/// database's: nothing is delivered late or early, no lease is taken over while its worker
/// heartbeats (each message delivered once, in one attempt), and the shared bucket's bound
/// holds across both.
pub async fn skewed_clocks_agree<H: Harness>() {
    assert!(
        std::path::Path::new(LIBFAKETIME).exists(),
        "this case needs libfaketime at {LIBFAKETIME}: apt-get install faketime"
    );
    let h = H::new().await;
    let (rate, burst) = (10.0, 2.0);
    Outbox::new(h.backend())
        .admin()
        .set_rate_limit("conf.skew", RateLimit::per_second(rate).burst(burst as u32))
        .await
        .unwrap();
    let mut children = vec![spawn_skewed(H::NAME, &h.url(), "-60")];
    wait_for(
        "the worker 60 s behind started",
        Duration::from_secs(30),
        async || h.clocks().await.len() == 1,
    )
    .await;
    // A worker 60 s behind alone: new messages are due for it at once.
    let mails: Vec<Mail> = (0..10).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many(&mut *tx, &mails).await.unwrap();
    tx.commit().await.unwrap();
    wait_for(
        "delivery by the worker 60 s behind",
        Duration::from_secs(20),
        async || h.deliveries().await.len() >= 10,
    )
    .await;
    // One 60 s ahead joins: delayed messages wait for their time, leases of the slower
    // worker stay its own, and both share the bucket.
    children.push(spawn_skewed(H::NAME, &h.url(), "+60"));
    wait_for(
        "the worker 60 s ahead started",
        Duration::from_secs(30),
        async || h.clocks().await.len() == 2,
    )
    .await;
    let now: Vec<Mail> = (10..40).map(|n| Mail { n }).collect();
    let later: Vec<Mail> = (40..50).map(|n| Mail { n }).collect();
    let mut tx = h.pool().begin().await.unwrap();
    enqueue_many(&mut *tx, &now).await.unwrap();
    outbox::enqueue_many_with(
        &mut *tx,
        &later,
        EnqueueOptions::new().after(Duration::from_secs(3)),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let all_done = async || {
        let rows = h.message_times().await;
        h.deliveries().await.len() >= 50 && rows.len() == 50 && {
            // Done rows: delivered and settled.
            h.count_messages("conf.mail").await == 50 && h.expired_leases().await == 0
        }
    };
    wait_for("delivery of all 50", Duration::from_secs(60), all_done).await;
    // Long enough for a rescue by the faster clock to show as a second delivery.
    tokio::time::sleep(Duration::from_secs(4)).await;
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }

    let clocks = h.clocks().await;
    for (pid, local, db) in &clocks {
        println!(
            "{}: worker {pid}: its clock minus the database's: {} ms",
            H::NAME,
            local - db
        );
    }
    let skews: Vec<i64> = clocks.iter().map(|(_, local, db)| local - db).collect();
    assert!(
        skews.iter().any(|s| (s + 60_000).abs() < 5_000)
            && skews.iter().any(|s| (s - 60_000).abs() < 5_000),
        "the workers' clocks were not skewed by -60 s and +60 s: {skews:?}"
    );
    let deliveries = h.delivery_times().await;
    let ids: HashSet<&str> = deliveries.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(ids.len(), 50, "every message delivered");
    assert_eq!(
        deliveries.len(),
        50,
        "no message delivered twice (no lease taken over)"
    );
    let messages = h.message_times().await;
    let at: std::collections::HashMap<&str, i64> = deliveries
        .iter()
        .map(|(id, _, at)| (id.as_str(), *at))
        .collect();
    let mut worst_late = 0;
    for (id, enqueued, due, attempts) in &messages {
        assert_eq!(*attempts, 1, "message {id} took {attempts} attempts");
        let started = at[id.as_str()];
        assert!(
            started >= *due,
            "message {id} started {} ms before it was due",
            due - started
        );
        worst_late = worst_late.max(started - due);
        if due - enqueued >= 3_000 {
            assert!(
                started - due < 10_000,
                "delayed message {id} started {} ms late",
                started - due
            );
        }
    }
    // The backlog of 40 goes at 10/s after a burst of 2: about 4 s; skew would add 60 s.
    assert!(
        worst_late < 15_000,
        "a message started {worst_late} ms after it was due"
    );
    let mut starts: Vec<i64> = deliveries.iter().map(|d| d.2).collect();
    starts.sort_unstable();
    for i in 0..starts.len() {
        for j in i..starts.len() {
            let window = (starts[j] - starts[i]) as f64 / 1000.0;
            let bound = burst + rate * window + 1.0;
            assert!(
                (j - i + 1) as f64 <= bound,
                "{} handler starts within {window:.3} s: over the bucket's bound {bound:.1}",
                j - i + 1
            );
        }
    }
    let pids: HashSet<i64> = deliveries.iter().map(|d| d.1).collect();
    println!(
        "{}: skewed workers (-60 s, +60 s): 50 delivered once each by {} processes, latest start {worst_late} ms after due",
        H::NAME,
        pids.len()
    );
}
