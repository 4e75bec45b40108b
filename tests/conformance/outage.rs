//! An SMTP outage met by the circuit breaker: two worker processes, a real SMTP server on
//! loopback that goes down for 30 s, and what the outage costs (attempts, log lines,
//! delay after recovery); and a breaker opened by another process holding this one.

use std::{
    collections::BTreeMap,
    process::Child,
    sync::Arc,
    time::{Duration, Instant},
};

use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SmtpConfig},
    Admin, BreakerState, Retention,
};

use super::{
    harness::Harness, processes::spawn_child_with, smtp_sink::SinkOptions, smtp_sink::SmtpSink,
};

/// The environment variable that gives a child process the SMTP server's port.
const SMTP_PORT: &str = "OUTBOX_CONF_SMTP_PORT";

/// How long the server is down.
const OUTAGE: Duration = Duration::from_secs(30);

/// A mailer to the loopback server on `port`.
fn mailer(port: u16) -> Mailer {
    let config = SmtpConfig::new("127.0.0.1")
        .port(port)
        .pool_size(2)
        .connect_timeout(Duration::from_secs(2))
        .command_timeout(Duration::from_secs(5));
    Mailer::new(MailerConfig::smtp(config)).unwrap()
}

/// Mail `i`, to its own recipient.
fn email(i: usize) -> Email {
    Email::builder()
        .from("Shop <shop@example.com>")
        .to(format!("user{i}@example.com"))
        .subject(format!("Order {i}"))
        .text("Thanks for your order.")
        .build()
        .unwrap()
}

/// The worker process of the outage case: sends `outbox.email` through the mailer's own
/// handler (default breaker, 10 at a time), keeping delivered rows so the test can read
/// their attempts, until killed.
pub async fn outage_child<H: Harness>(h: Arc<H>) {
    let port = std::env::var(SMTP_PORT).unwrap().parse().unwrap();
    Outbox::new(h.backend())
        .register_with::<Email, _>(mailer(port).handler(), QueueOptions::new().concurrency(10))
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shutdown_timeout(Duration::from_secs(1))
        .run_until(std::future::pending())
        .await
        .unwrap();
}

/// Enqueues mails `range` in one transaction; their ids.
async fn enqueue<H: Harness>(h: &H, range: std::ops::Range<usize>) -> Vec<String> {
    let mut tx = h.pool().begin().await.unwrap();
    let mut ids = Vec::new();
    for i in range {
        let enqueued = email(i).enqueue(&mut *tx).await.unwrap();
        ids.push(enqueued.id().to_string());
    }
    tx.commit().await.unwrap();
    ids
}

/// Waits until `done` says so, polling every 20 ms; panics after `limit`.
async fn until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within {limit:?}");
}

/// The one breaker the mailer's handler uses.
async fn breaker<B: outbox::store::Backend>(admin: &Admin<B>) -> Option<BreakerState> {
    admin.breakers().await.unwrap().into_iter().next()
}

/// Kills the child processes and returns what they logged.
fn logs_of(children: Vec<Child>) -> String {
    children
        .into_iter()
        .map(|mut c| {
            let _ = c.kill();
            let out = c.wait_with_output().unwrap();
            String::from_utf8_lossy(&out.stderr).into_owned()
        })
        .collect::<Vec<_>>()
        .join("")
}

/// Two worker processes send through one SMTP server; it goes down for 30 s while 100
/// mails wait. The breaker opens once (one WARN across both processes, with the reason,
/// and no other WARN), each mail is charged at most one attempt by the outage (the failed
/// probes aside; in all, at most what was running when it opened), nothing is dead-lettered, the breaker closes once (one INFO) and every
/// mail arrives exactly once within 5 s of the server's return.
///
/// Timing: the outage starts as the mails are enqueued; the breaker opens once the failures
/// in a row have lasted a second (the mails that failed meanwhile wait 1 s without using an
/// attempt); probes run 1, 3, 7, 15 and 31 s after the opening (1 s doubling), so the first
/// probe after the 30 s outage is the fifth, about 2 s after the return.
pub async fn an_smtp_outage_opens_one_breaker_across_two_processes<H: Harness>() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let h = H::new().await;
    let port = sink.port.to_string();
    let children: Vec<Child> = (0..2)
        .map(|_| spawn_child_with(H::NAME, "outage", &h.url(), &[(SMTP_PORT, &port)]))
        .collect();
    let admin = Admin::new(h.backend());
    // Warm up: both processes run, the pools hold connections the outage will cut.
    let before = enqueue(&h, 0..10).await;
    until(
        "the first mails' delivery",
        Duration::from_secs(60),
        async || sink.received().len() == before.len(),
    )
    .await;
    sink.outage(OUTAGE).await;
    let during = enqueue(&h, 10..110).await;
    until(
        "the breaker's opening",
        Duration::from_secs(10),
        async || breaker(&admin).await.is_some_and(|b| b.is_open()),
    )
    .await;
    until(
        "the server's return",
        OUTAGE + Duration::from_secs(10),
        async || sink.outages()[0].1.is_some(),
    )
    .await;
    until(
        "every mail's delivery",
        Duration::from_secs(60),
        async || sink.received().len() >= 110,
    )
    .await;
    // Late duplicates would arrive now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let logs = logs_of(children);

    let (down, back) = sink.outages()[0];
    let back = back.unwrap();
    let received = sink.received();
    let last = received.iter().map(|r| r.at).max().unwrap();
    let after_return = last.saturating_duration_since(back);
    let state = breaker(&admin).await.expect("the breaker has a row");
    let mut charged: BTreeMap<i64, usize> = BTreeMap::new();
    for id in &during {
        *charged.entry(h.attempts(id).await).or_default() += 1;
    }
    println!(
        "{}: down {:?}; breaker opened {} time(s), {} failed probe(s); all delivered {after_return:?} \
         after the return; attempts per mail enqueued during the outage: {charged:?}",
        H::NAME,
        back - down,
        state.times_opened,
        state.probes_failed,
    );
    let warns: Vec<&str> = logs.lines().filter(|l| l.contains(" WARN ")).collect();
    assert_eq!(warns.len(), 1, "one WARN, the opening: {warns:#?}");
    assert!(
        warns[0].contains("circuit breaker opened") && warns[0].contains("refused"),
        "the WARN says the breaker opened and why: {}",
        warns[0]
    );
    let closed = logs
        .lines()
        .filter(|l| l.contains(" INFO ") && l.contains("circuit breaker closed"))
        .count();
    assert_eq!(closed, 1, "one INFO, the closing:\n{logs}");
    assert!(!state.is_open() && state.times_opened == 1, "{state:?}");
    assert!(
        received.iter().all(|r| r.at < down || r.at >= back),
        "a mail arrived while the server was down"
    );
    let mut to: Vec<String> = received.iter().map(|r| r.rcpt[0].clone()).collect();
    to.sort();
    let mut expected: Vec<String> = (0..110).map(|i| format!("user{i}@example.com")).collect();
    expected.sort();
    assert_eq!(to, expected, "each mail exactly once");
    assert!(
        after_return <= Duration::from_secs(5),
        "everything delivered {after_return:?} after the server's return"
    );
    // A mail's attempts: the delivery, at most one failure from the outage, and the
    // failed probes it carried.
    let probes = state.probes_failed as usize;
    let over: usize = charged
        .iter()
        .filter(|(attempts, _)| **attempts > 2)
        .map(|(_, n)| n)
        .sum();
    assert!(
        over <= probes,
        "{over} mails used more than 2 attempts; only {probes} probes failed: {charged:?}"
    );
    let extra: i64 = charged
        .iter()
        .map(|(attempts, n)| (attempts - 1) * *n as i64)
        .sum();
    // Per process: the 10 running when it opened, and the 2 started in the slots the
    // first two failures freed before the third opened it.
    assert!(
        extra <= 2 * (10 + 2) + probes as i64,
        "{extra} failed attempts for 100 mails: at most 2 × (10 running + 2 before the \
         third failure) and the failed probes ({probes})"
    );
    let dead = admin
        .dead_letters()
        .list(&outbox::DeadLetterFilter::default(), 0, 10)
        .await
        .unwrap();
    assert!(dead.is_empty(), "nothing is given up for the outage");
}

/// A breaker opened by another process (its row written, as that process would) holds
/// this process's mails although none of them failed here; an operator's "probe now"
/// lets one probe through within a second, which closes the breaker for everyone, and the
/// rest follow at once.
pub async fn a_breaker_opened_elsewhere_holds_this_process<H: Harness>() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let h = H::new().await;
    let admin = Admin::new(h.backend());
    let mailer = mailer(sink.port);
    let name = mailer.downstream().unwrap();
    assert_eq!(name, format!("smtp:127.0.0.1:{}", sink.port));
    let opened = outbox::store::BreakerStore::open_breaker(
        &h.backend(),
        &name,
        "connection refused (another process)",
        outbox::store::Now::Database,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    assert!(opened);
    let outbox = Outbox::new(h.backend()).register::<Email, _>(mailer.handler());
    outbox
        .run_until(async {
            enqueue(&h, 0..20).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert_eq!(sink.received().len(), 0, "held by the open breaker");
            let asked = Instant::now();
            assert!(admin.probe_breaker_now(&name).await.unwrap());
            until(
                "the probe and the rest",
                Duration::from_secs(10),
                async || sink.received().len() == 20,
            )
            .await;
            println!(
                "{}: probe asked for → 20 mails delivered in {:?}",
                H::NAME,
                asked.elapsed()
            );
        })
        .await
        .unwrap();
    let state = breaker(&admin).await.unwrap();
    assert!(!state.is_open(), "the probe closed it: {state:?}");
}
