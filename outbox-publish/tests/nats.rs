//! The NATS JetStream relay against real servers: the shared JetStream server on
//! 127.0.0.1:4222 (each test on streams and subjects of its own, deleted at the end) and,
//! for the restart, a private `nats-server` started here on a free port and store dir.
//!
//! * 2,000 events through an outbox on a SQLite file: a JetStream consumer reads each once,
//!   with `Nats-Msg-Id` = the outbox id, its headers, content type and payload;
//! * a re-publish with the same id (a lost ack) is dropped by the stream, directly and
//!   through the outbox;
//! * a subject no stream captures: retried, the error naming the subject and `ensure_stream`;
//!   subjects and headers NATS cannot carry: permanent;
//! * the private server killed mid-run and restarted on its port and store: every event
//!   stored once, none dead-lettered, the type's breaker opened and closed, the outage cost
//!   at most the attempts running when the breaker opened, and the duplicate window
//!   survived the restart;
//! * 50 keys × 20 events at concurrency 8: every key's events in enqueue order;
//! * `ensure_stream` creates, updates (keeping the operator's settings) and refuses memory
//!   streams; the relay's `outbox_publish_total` counters count each outcome.
//!
//! A server that cannot be reached fails the test with a message; nothing is skipped.
#![cfg(feature = "nats")]

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicU32, AtomicUsize, Ordering},
        Arc, Mutex, OnceLock,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use async_nats::jetstream::{self, consumer, stream, Context};
use futures::{future::BoxFuture, StreamExt};
use outbox_core::{
    sqlx::SqlitePool, store::LiveFilter, DeadLetterFilter, Handler, HandlerError, HandlerErrorKind,
    MessageContext, Outbox, QueueOptions, Retention, RetrySchedule, SqliteBackend,
};
use outbox_publish::{
    nats::{ensure_stream, NatsRelay, StreamError, StreamSettings},
    Event, EVENT_TYPE,
};

/// The shared JetStream server.
const SHARED: &str = "nats://127.0.0.1:4222";

/// The nats-server binary the restart test runs.
const NATS_SERVER: &str = "/usr/sbin/nats-server";

// ---------------------------------------------------------------------------------------
// Helpers

/// The relay's counters as recorded in this process (every test adds to them, so tests
/// compare before and after, or ask for at least).
#[derive(Default)]
struct Counts(Mutex<HashMap<String, u64>>);

fn counts() -> &'static Counts {
    static COUNTS: OnceLock<&'static Counts> = OnceLock::new();
    COUNTS.get_or_init(|| {
        let counts: &'static Counts = Box::leak(Box::default());
        metrics::set_global_recorder(Recorder(counts))
            .expect("no other metrics recorder in this test binary");
        counts
    })
}

/// `outbox_publish_total{broker="nats", outcome}` so far.
fn published(outcome: &str) -> u64 {
    let key = format!("outbox_publish_total{{broker=nats,outcome={outcome}}}");
    counts().0.lock().unwrap().get(&key).copied().unwrap_or(0)
}

struct Recorder(&'static Counts);

struct Count(&'static Counts, String);

impl metrics::CounterFn for Count {
    fn increment(&self, value: u64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }

    fn absolute(&self, value: u64) {
        let mut map = self.0 .0.lock().unwrap();
        let v = map.entry(self.1.clone()).or_default();
        *v = (*v).max(value);
    }
}

impl metrics::Recorder for Recorder {
    fn describe_counter(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_gauge(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }
    fn describe_histogram(
        &self,
        _: metrics::KeyName,
        _: Option<metrics::Unit>,
        _: metrics::SharedString,
    ) {
    }

    fn register_counter(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        metrics::Counter::from_arc(Arc::new(Count(self.0, name)))
    }

    fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
        metrics::Gauge::noop()
    }

    fn register_histogram(
        &self,
        _: &metrics::Key,
        _: &metrics::Metadata<'_>,
    ) -> metrics::Histogram {
        metrics::Histogram::noop()
    }
}

/// A name no other test or run uses: `prefix` + process id + a counter + the time.
fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}{}x{}x{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Connects to `url`, failing the test with a message when no server answers.
async fn connect(url: &str) -> async_nats::Client {
    counts();
    match tokio::time::timeout(Duration::from_secs(10), async_nats::connect(url)).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => panic!(
            "cannot reach the NATS server at {url} ({e}): these tests need `nats-server -js` \
             listening there"
        ),
        Err(_) => panic!("the NATS server at {url} did not answer within 10 s"),
    }
}

/// The shared server's JetStream context, and a stream of its own capturing `<prefix>.>`.
async fn shared_stream(tag: &str) -> (Context, String, String) {
    let js = jetstream::new(connect(SHARED).await);
    let name = unique(&format!("OUTBOX_{tag}_"));
    let prefix = unique(&format!("t{}", tag.to_lowercase()));
    ensure_stream(
        &js,
        StreamSettings::new(name.clone(), [format!("{prefix}.>")]),
    )
    .await
    .unwrap_or_else(|e| panic!("the shared server must have JetStream on (-js): {e}"));
    (js, name, prefix)
}

/// A temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(unique(&format!("outbox-nats-{tag}-")));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An outbox on a SQLite file in `dir`, migrated, with `relay` (or any handler) for events.
async fn outbox_with<H>(
    dir: &TempDir,
    handler: H,
    options: QueueOptions,
) -> (Outbox<SqliteBackend>, SqlitePool)
where
    H: Handler<Event, ()>,
{
    let url = format!("sqlite://{}", dir.path().join("outbox.db").display());
    let pool = outbox_core::sqlite::connect(&url).await.unwrap();
    let outbox = Outbox::new(SqliteBackend::new(pool.clone()))
        .register_with::<Event, _>(handler, options)
        .shutdown_timeout(Duration::from_secs(2));
    outbox.migrate().await.unwrap();
    (outbox, pool)
}

/// Enqueues `events` in one transaction; their outbox ids, in order.
async fn enqueue(pool: &SqlitePool, events: &[Event]) -> Vec<String> {
    let mut tx = pool.begin().await.unwrap();
    let mut ids = Vec::with_capacity(events.len());
    for event in events {
        let enqueued = event.enqueue(&mut *tx).await.unwrap();
        assert!(!enqueued.is_duplicate());
        ids.push(enqueued.id().to_string());
    }
    tx.commit().await.unwrap();
    ids
}

/// Messages stored in stream `name`.
async fn stored(js: &Context, name: &str) -> u64 {
    let mut stream = js.get_stream(name).await.unwrap();
    stream.info().await.unwrap().state.messages
}

/// Every message of stream `name`, in stream order, read by an ephemeral pull consumer.
async fn read_all(js: &Context, name: &str) -> Vec<jetstream::Message> {
    let total = stored(js, name).await as usize;
    let stream = js.get_stream(name).await.unwrap();
    let consumer = stream
        .create_consumer(consumer::pull::Config {
            deliver_policy: consumer::DeliverPolicy::All,
            ack_policy: consumer::AckPolicy::None,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut read = Vec::with_capacity(total);
    while read.len() < total {
        let mut batch = consumer
            .batch()
            .max_messages((total - read.len()).min(500))
            .expires(Duration::from_secs(5))
            .messages()
            .await
            .unwrap();
        let before = read.len();
        while let Some(message) = batch.next().await {
            read.push(message.unwrap());
        }
        assert!(
            read.len() > before,
            "the consumer read {before} of {total} messages, then nothing for 5 s"
        );
    }
    read
}

/// A header of a consumed message.
fn header<'a>(message: &'a jetstream::Message, name: &str) -> Option<&'a str> {
    message.headers.as_ref()?.get(name).map(|v| v.as_str())
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

async fn live(outbox: &Outbox<SqliteBackend>) -> u64 {
    outbox
        .admin()
        .messages()
        .count(&LiveFilter::all())
        .await
        .unwrap()
}

async fn dead(outbox: &Outbox<SqliteBackend>) -> u64 {
    outbox
        .admin()
        .dead_letters()
        .count(&DeadLetterFilter::default())
        .await
        .unwrap()
}

// ---------------------------------------------------------------------------------------
// 2,000 events

/// Event `i` on a subject under `prefix`: JSON with two headers, or (every fifth) bytes
/// with a content type of its own.
fn event(prefix: &str, i: usize) -> Event {
    let subject = format!("{prefix}.orders.{}", i % 10);
    if i.is_multiple_of(5) {
        let bytes: Vec<u8> = (0..=255u8).cycle().skip(i % 256).take(64 + i % 7).collect();
        Event::bytes(subject, bytes)
            .content_type("application/octet-stream")
            .header("n", i.to_string())
    } else {
        Event::json(
            subject,
            &serde_json::json!({ "order": i, "note": "naïve €" }),
        )
        .unwrap()
        .header("n", i.to_string())
        .header("tenant", "acme")
    }
}

/// 2,000 events enqueued in one transaction and relayed by a drain: the stream holds each
/// once, with `Nats-Msg-Id` = its outbox id, its subject, headers, content type and payload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_events_arrive_once_with_their_id_headers_and_payload() {
    const N: usize = 2_000;
    let (js, name, prefix) = shared_stream("BULK").await;
    let dir = TempDir::new("bulk");
    let (outbox, pool) = outbox_with(
        &dir,
        NatsRelay::new(js.clone()),
        QueueOptions::new().concurrency(16),
    )
    .await;
    let events: Vec<Event> = (0..N).map(|i| event(&prefix, i)).collect();
    let ids = enqueue(&pool, &events).await;

    let before = published("published");
    let started = Instant::now();
    let report = outbox.drain().await.unwrap();
    println!("drained {N} events to JetStream in {:?}", started.elapsed());
    assert_eq!(report.counts.delivered, N as u64, "{report:?}");
    assert_eq!(report.counts.failed_attempts, 0, "{report:?}");
    assert_eq!(live(&outbox).await, 0);
    assert!(
        published("published") - before >= N as u64,
        "counted as published"
    );

    let messages = read_all(&js, &name).await;
    assert_eq!(messages.len(), N, "the stream holds each event once");
    let by_id: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut seen = HashSet::new();
    for message in &messages {
        let id = header(message, "Nats-Msg-Id").expect("every message has a Nats-Msg-Id");
        let i = *by_id
            .get(id)
            .unwrap_or_else(|| panic!("unknown Nats-Msg-Id {id}"));
        assert!(seen.insert(i), "event {i} stored twice");
        let expected = &events[i];
        assert_eq!(message.subject.as_str(), expected.subject);
        assert_eq!(
            message.payload.as_ref(),
            expected.payload.to_bytes().as_slice(),
            "payload of {i}"
        );
        assert_eq!(header(message, "n"), Some(i.to_string().as_str()));
        assert_eq!(
            header(message, "tenant"),
            expected.headers.get("tenant").map(String::as_str)
        );
        assert_eq!(
            header(message, "Content-Type"),
            expected.content_type.as_deref()
        );
    }
    assert_eq!(seen.len(), N);

    js.delete_stream(&name).await.unwrap();
}

/// `ensure_stream` creates a file stream with the settings, leaves a matching one alone,
/// updates the window and subjects of an existing one keeping what the operator set, and
/// refuses a memory stream and settings that make no stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_stream_creates_updates_and_refuses_memory_streams() {
    let js = jetstream::new(connect(SHARED).await);
    let name = unique("OUTBOX_ENSURE_");
    let prefix = unique("tensure");
    let created = ensure_stream(
        &js,
        StreamSettings::new(name.clone(), [format!("{prefix}.a.>")]),
    )
    .await
    .unwrap();
    assert_eq!(created.config.storage, stream::StorageType::File);
    assert_eq!(created.config.duplicate_window, Duration::from_secs(120));
    assert_eq!(created.config.subjects, vec![format!("{prefix}.a.>")]);

    // The operator sets a limit; ensure_stream keeps it while it changes the window.
    let mut limited = created.config.clone();
    limited.max_messages = 1_000_000;
    js.update_stream(&limited).await.unwrap();
    let settings = StreamSettings::new(
        name.clone(),
        [format!("{prefix}.a.>"), format!("{prefix}.b.>")],
    )
    .duplicate_window(Duration::from_secs(600));
    let updated = ensure_stream(&js, settings.clone()).await.unwrap();
    assert_eq!(updated.config.duplicate_window, Duration::from_secs(600));
    assert_eq!(updated.config.subjects.len(), 2);
    assert_eq!(
        updated.config.max_messages, 1_000_000,
        "the operator's limit is kept"
    );
    let again = ensure_stream(&js, settings).await.unwrap();
    assert_eq!(again.config, updated.config);

    let memory = unique("OUTBOX_MEMORY_");
    js.create_stream(stream::Config {
        name: memory.clone(),
        subjects: vec![format!("{prefix}.m.>")],
        storage: stream::StorageType::Memory,
        ..Default::default()
    })
    .await
    .unwrap();
    let refused = ensure_stream(
        &js,
        StreamSettings::new(memory.clone(), [format!("{prefix}.m.>")]),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(refused, StreamError::MemoryStorage(_)),
        "{refused}"
    );
    assert!(refused.to_string().contains("file storage"), "{refused}");

    let none: [&str; 0] = [];
    let empty = ensure_stream(&js, StreamSettings::new(unique("OUTBOX_NONE_"), none))
        .await
        .unwrap_err();
    assert!(matches!(empty, StreamError::Settings(_)), "{empty}");

    js.delete_stream(&name).await.unwrap();
    js.delete_stream(&memory).await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Lost acks

/// A relay whose first ack of each message is "lost": it publishes, then fails the
/// attempt as if the ack never came.
#[derive(Clone)]
struct LosesFirstAck {
    relay: NatsRelay,
    calls: Arc<AtomicUsize>,
}

impl Handler<Event, ()> for LosesFirstAck {
    fn call(
        &self,
        message: Event,
        ctx: MessageContext<()>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let this = self.clone();
        Box::pin(async move {
            this.calls.fetch_add(1, Ordering::SeqCst);
            let attempt = ctx.attempt();
            Handler::<Event, ()>::call(&this.relay, message, ctx).await?;
            if attempt == 1 {
                return Err(HandlerError::retry("the ack was lost on the way back"));
            }
            Ok(())
        })
    }
}

/// The same outbox id published twice is stored once: the second ack says `duplicate`;
/// through the outbox, an attempt whose ack was lost is published again on its retry and
/// the stream drops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_republish_with_the_same_id_is_dropped_by_the_stream() {
    let (js, name, prefix) = shared_stream("DEDUP").await;
    let relay = NatsRelay::new(js.clone());
    let duplicates = published("duplicate");

    // Directly: the handler's publish, twice with one id.
    let event = Event::json(format!("{prefix}.direct"), &serde_json::json!({"n": 1})).unwrap();
    let id = "01JDIRECTPUBLISHEDTWICE0000";
    let first = relay.publish(id, &event).await.unwrap();
    let second = relay.publish(id, &event).await.unwrap();
    assert!(!first.duplicate, "{first:?}");
    assert!(
        second.duplicate,
        "the re-publish is a duplicate: {second:?}"
    );
    assert_eq!(second.sequence, first.sequence);
    assert_eq!(stored(&js, &name).await, 1, "the stream holds one message");

    // Through the outbox: attempt 1 publishes and loses its ack, attempt 2 re-publishes.
    let dir = TempDir::new("dedup");
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = LosesFirstAck {
        relay,
        calls: Arc::clone(&calls),
    };
    let options = QueueOptions::new().retry(RetrySchedule::fixed([Duration::from_millis(200)]));
    let (outbox, pool) = outbox_with(&dir, handler, options).await;
    let ids = enqueue(
        &pool,
        &[Event::json(format!("{prefix}.outbox"), &serde_json::json!({"n": 2})).unwrap()],
    )
    .await;
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.failed_attempts, 1, "{report:?}");
    assert_eq!(stored(&js, &name).await, 2, "attempt 1 stored the event");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, 1, "{report:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(live(&outbox).await, 0);
    assert_eq!(stored(&js, &name).await, 2, "the re-publish was dropped");
    assert!(
        published("duplicate") - duplicates >= 2,
        "counted as duplicates"
    );
    let messages = read_all(&js, &name).await;
    assert_eq!(header(&messages[1], "Nats-Msg-Id"), Some(ids[0].as_str()));

    js.delete_stream(&name).await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Refusals

/// An event on a subject no stream captures is retried (not done, not dead), its error
/// naming the subject and `ensure_stream`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_no_stream_captures_is_retried_with_the_fix() {
    let client = connect(SHARED).await;
    let subject = format!("{}.nowhere.created", unique("tnostream"));
    let dir = TempDir::new("nostream");
    let (outbox, pool) =
        outbox_with(&dir, NatsRelay::from_client(client), QueueOptions::new()).await;
    let ids = enqueue(
        &pool,
        &[Event::json(subject.clone(), &serde_json::json!({"n": 1})).unwrap()],
    )
    .await;
    let no_stream = published("no_stream");
    let report = outbox.drain().await.unwrap();
    assert!(published("no_stream") > no_stream, "counted as no_stream");
    assert_eq!(report.counts.failed_attempts, 1, "{report:?}");
    assert_eq!(
        report.counts.delivered + report.counts.given_up,
        0,
        "{report:?}"
    );
    let shown = outbox
        .admin()
        .messages()
        .show(&outbox_core::MessageId::from_string(ids[0].clone()))
        .await
        .unwrap()
        .expect("the event is still queued");
    assert_eq!(shown.message.attempts, 1);
    assert!(shown.message.due_at > SystemTime::now(), "retried later");
    let error = shown.message.last_error.unwrap();
    assert!(
        error.contains(&subject),
        "the error names the subject: {error}"
    );
    assert!(
        error.contains("ensure_stream"),
        "the error names the fix: {error}"
    );
    assert_eq!(dead(&outbox).await, 0);
}

/// What NATS cannot carry is refused for good, without a panic: a subject with a space, a
/// wildcard or the server's `$JS.API`, a header value with a line break; a header name
/// NATS takes, a payload of any bytes, is published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_nats_cannot_carry_is_permanent() {
    let (js, name, prefix) = shared_stream("REFUSE").await;
    let relay = NatsRelay::new(js.clone());
    let bad = [
        Event::bytes(format!("{prefix}.a b"), vec![1]),
        Event::bytes(format!("{prefix}.*"), vec![1]),
        Event::bytes("", vec![1]),
        Event::bytes(format!("$JS.API.STREAM.DELETE.{name}"), vec![1]),
        Event::bytes(format!("{prefix}.ok"), vec![1]).header("x", "a\r\nPUB x 1"),
        Event::bytes(format!("{prefix}.ok"), vec![1]).header("bad:name", "v"),
        Event::bytes(format!("{prefix}.ok"), vec![1]).header("Nats-Msg-Id", "forged"),
    ];
    let refused = published("refused");
    for (n, event) in bad.iter().enumerate() {
        let error = relay
            .publish(&format!("01JREFUSED{n:016}"), event)
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            HandlerErrorKind::Permanent,
            "{event:?}: {error}"
        );
    }
    assert_eq!(stored(&js, &name).await, 0, "nothing was published");
    assert!(
        published("refused") - refused >= bad.len() as u64,
        "counted as refused"
    );
    let fine = Event::bytes(format!("{prefix}.ok"), vec![0, 255, 10, 13]).header("X-Trace", "é");
    relay
        .publish("01JACCEPTED0000000000000000", &fine)
        .await
        .unwrap();
    assert_eq!(stored(&js, &name).await, 1);
    js.delete_stream(&name).await.unwrap();
}

// ---------------------------------------------------------------------------------------
// A server killed and restarted

/// A nats-server of this test's own, on `port` with its store in `dir`; killed on drop.
struct PrivateServer {
    child: Child,
}

impl PrivateServer {
    fn start(port: u16, dir: &Path) -> Self {
        let child = Command::new(NATS_SERVER)
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {NATS_SERVER}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{NATS_SERVER} did not listen on port {port} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child }
    }

    /// SIGKILL: no shutdown, no flush.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The private server is killed while the relay publishes 3,000 events and restarted 3 s
/// later on the same port and store: the relay's breaker (the type's) opens, nothing is
/// dead-lettered, the outage spends almost no attempts, and once the server is back every
/// event is in the stream exactly once (an event stored just before the kill, whose ack
/// was lost, is published again and dropped as a duplicate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_and_restarted_server_loses_nothing_and_opens_the_breaker() {
    const N: usize = 3_000;
    let store = TempDir::new("store");
    let port = free_port();
    let server = PrivateServer::start(port, store.path());
    let url = format!("nats://127.0.0.1:{port}");
    let js = jetstream::new(connect(&url).await);
    let name = "OUTBOX_RESTART";
    ensure_stream(&js, StreamSettings::new(name, ["restart.>"]))
        .await
        .unwrap();
    // One event stored before the kill, published again after the restart: the duplicate
    // window survives the kill (the server rebuilds it from its store).
    ensure_stream(
        &js,
        StreamSettings::new("OUTBOX_RESTART_WINDOW", ["window.>"]),
    )
    .await
    .unwrap();
    let relay = NatsRelay::new(js.clone());
    let before_kill = Event::json("window.check", &serde_json::json!({"n": 1})).unwrap();
    let window_id = "01JSTOREDBEFORETHEKILL00000";
    let first = relay.publish(window_id, &before_kill).await.unwrap();
    assert!(!first.duplicate);

    let dir = TempDir::new("restart");
    // Short retries keep the test short should an attempt fail below the breaker's
    // threshold; the outage itself spends no attempt once the breaker is open.
    let options = QueueOptions::new()
        .concurrency(8)
        .retry(RetrySchedule::fixed([Duration::from_secs(1)]));
    let (outbox, pool) = outbox_with(&dir, relay.clone(), options).await;
    // Delivered rows are kept, to count their attempts.
    let outbox = outbox.retention(Retention::keep_for(Duration::from_secs(3600)));
    let events: Vec<Event> = (0..N)
        .map(|i| {
            Event::json(
                format!("restart.orders.{}", i % 7),
                &serde_json::json!({"i": i}),
            )
            .unwrap()
        })
        .collect();
    let ids = enqueue(&pool, &events).await;
    let outbox = Arc::new(outbox);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn({
        let outbox = Arc::clone(&outbox);
        async move {
            outbox
                .run_until(async {
                    let _ = stopped.await;
                })
                .await
        }
    });

    until(
        "a quarter of the events stored",
        Duration::from_secs(60),
        async || stored(&js, name).await >= (N / 4) as u64,
    )
    .await;
    let killed_at = Instant::now();
    let (downs, duplicates) = (published("down"), published("duplicate"));
    server.kill();
    until(
        "the breaker's opening",
        Duration::from_secs(10),
        async || {
            outbox
                .admin()
                .breakers()
                .await
                .unwrap()
                .iter()
                .any(|b| b.name == EVENT_TYPE && b.is_open())
        },
    )
    .await;
    let opened_after = killed_at.elapsed();
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(opened_after)).await;
    let server = PrivateServer::start(port, store.path());
    let back_at = Instant::now();
    until("every event stored", Duration::from_secs(90), async || {
        stored(&js, name).await >= N as u64
    })
    .await;
    let all_stored_after = back_at.elapsed();
    let again = relay.publish(window_id, &before_kill).await.unwrap();
    assert!(
        again.duplicate && again.sequence == first.sequence,
        "a re-publish after the restart is dropped: {again:?}"
    );
    assert_eq!(stored(&js, "OUTBOX_RESTART_WINDOW").await, 1);
    until(
        "every event marked done",
        Duration::from_secs(30),
        async || live(&outbox).await == 0,
    )
    .await;
    // Late duplicates would show now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();

    let breakers = outbox.admin().breakers().await.unwrap();
    let breaker = breakers
        .iter()
        .find(|b| b.name == EVENT_TYPE)
        .expect("the type's breaker has a row");
    println!(
        "breaker opened {opened_after:?} after the kill, {} time(s), {} failed probe(s); \
         every event stored {all_stored_after:?} after the restart; {} publish(es) failed \
         as down; about {} re-publish(es) dropped as duplicates",
        breaker.times_opened,
        breaker.probes_failed,
        published("down") - downs,
        published("duplicate") - duplicates,
    );
    assert!(published("down") > downs, "the outage counted as down");
    assert!(breaker.times_opened >= 1, "{breaker:?}");
    assert!(!breaker.is_open(), "closed once NATS answered: {breaker:?}");
    assert_eq!(dead(&outbox).await, 0, "nothing is given up for the outage");
    // Attempts the outage cost: per opening, the "down" failures below the breaker's
    // threshold (2) and the publishes running when it opened (at most the concurrency, 8);
    // and the failed probes. Every other event waited behind the breaker without using one.
    let attempts: Vec<i64> =
        outbox_core::sqlx::query_scalar("SELECT attempts FROM outbox_messages")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(attempts.len(), N, "every event kept as delivered");
    let extra: i64 = attempts.iter().map(|a| a - 1).sum();
    println!("attempts beyond the first: {extra} for {N} events");
    let bound = breaker.times_opened as i64 * (2 + 8) + i64::from(breaker.probes_failed);
    assert!(
        extra <= bound,
        "{extra} attempts spent on the outage: at most {bound} (2 below the threshold and 8 \
         running per opening, and the failed probes)"
    );
    assert_eq!(stored(&js, name).await, N as u64, "no duplicate stored");
    let messages = read_all(&js, name).await;
    let stored_ids: Vec<&str> = messages
        .iter()
        .map(|m| header(m, "Nats-Msg-Id").unwrap())
        .collect();
    let unique_ids: HashSet<&str> = stored_ids.iter().copied().collect();
    assert_eq!(unique_ids.len(), N, "each event once");
    assert_eq!(
        unique_ids,
        ids.iter().map(String::as_str).collect::<HashSet<_>>()
    );

    js.delete_stream(name).await.unwrap();
    drop(server);
}

// ---------------------------------------------------------------------------------------
// Order per key

/// 50 keys × 20 events, enqueued interleaved, relayed at concurrency 8: the stream holds
/// each key's events in enqueue order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_keys_events_are_stored_in_enqueue_order() {
    const KEYS: usize = 50;
    const PER_KEY: usize = 20;
    let (js, name, prefix) = shared_stream("ORDER").await;
    let dir = TempDir::new("order");
    let (outbox, pool) = outbox_with(
        &dir,
        NatsRelay::new(js.clone()),
        QueueOptions::new().concurrency(8),
    )
    .await;
    let mut events = Vec::new();
    for i in 0..PER_KEY {
        for k in 0..KEYS {
            events.push(
                Event::json(
                    format!("{prefix}.accounts.{}", (k * 7 + i) % 5),
                    &serde_json::json!({ "key": k, "i": i }),
                )
                .unwrap()
                .key(format!("account-{k}")),
            );
        }
    }
    enqueue(&pool, &events).await;
    let report = outbox.drain().await.unwrap();
    assert_eq!(
        report.counts.delivered,
        (KEYS * PER_KEY) as u64,
        "{report:?}"
    );

    let messages = read_all(&js, &name).await;
    assert_eq!(messages.len(), KEYS * PER_KEY);
    let mut per_key: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for message in &messages {
        let v: serde_json::Value = serde_json::from_slice(&message.payload).unwrap();
        per_key
            .entry(v["key"].as_u64().unwrap())
            .or_default()
            .push(v["i"].as_u64().unwrap());
    }
    assert_eq!(per_key.len(), KEYS);
    let expected: Vec<u64> = (0..PER_KEY as u64).collect();
    for (key, seen) in &per_key {
        assert_eq!(seen, &expected, "key {key}'s events out of order");
    }
    js.delete_stream(&name).await.unwrap();
}

// ---------------------------------------------------------------------------------------
// The consuming side: `consume` through the inbox

/// Events relayed to a stream with a 1 s duplicate window are consumed through
/// `NatsConsumer` (4 lanes) into a SQLite table with the inbox: each lands once with its
/// outbox id, subject, headers and payload; one event re-published after the window (so
/// the stream stores it twice) reaches the handler once, its second copy skipped; a
/// handler failure is nak'd and the redelivery (marked redelivered) commits once; a
/// message published without `Nats-Msg-Id` is recorded under its stream sequence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumed_events_reach_the_handler_once_through_the_inbox() {
    use outbox_publish::{
        nats::{NatsConsumer, DEFAULT_NAK_DELAY},
        Inbox, Received,
    };

    const N: usize = 500;
    let js = jetstream::new(connect(SHARED).await);
    let name = unique("OUTBOX_CONSUME_");
    let prefix = unique("tconsume");
    ensure_stream(
        &js,
        StreamSettings::new(name.clone(), [format!("{prefix}.>")])
            .duplicate_window(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let dir = TempDir::new("consume");
    let relay = NatsRelay::new(js.clone());
    let (outbox, pool) =
        outbox_with(&dir, relay.clone(), QueueOptions::new().concurrency(16)).await;
    outbox_core::sqlx::query(
        "CREATE TABLE got (id TEXT PRIMARY KEY, subject TEXT NOT NULL, payload BLOB NOT NULL, \
         n TEXT, redelivered INTEGER NOT NULL)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let events: Vec<Event> = (0..N).map(|i| event(&prefix, i)).collect();
    let ids = enqueue(&pool, &events).await;
    let report = outbox.drain().await.unwrap();
    assert_eq!(report.counts.delivered, N as u64, "{report:?}");

    // Event 7 again, after the stream's duplicate window: stored a second time.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let again = relay.publish(&ids[7], &events[7]).await.unwrap();
    assert!(!again.duplicate, "outside the window: stored again");
    // A message of another publisher, without Nats-Msg-Id.
    js.publish(format!("{prefix}.foreign"), "no id".into())
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(stored(&js, &name).await, N as u64 + 2);

    let consumer = js
        .get_stream(&name)
        .await
        .unwrap()
        .create_consumer(consumer::pull::Config {
            durable_name: Some("billing".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: Duration::from_secs(10),
            ..Default::default()
        })
        .await
        .unwrap();
    let calls: Arc<Mutex<HashMap<String, Vec<bool>>>> = Arc::default();
    let fail_once = ids[3].clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let messages = consumer.messages().await.unwrap().take_until(stopped);
    let running = tokio::spawn({
        let calls = Arc::clone(&calls);
        let inbox = Inbox::new(pool.clone(), "billing");
        async move {
            NatsConsumer::new(inbox)
                .concurrency(4)
                .nak_delay(Duration::from_millis(100), Duration::from_secs(1))
                .run(
                    messages,
                    move |tx: &mut outbox_core::sqlx::Transaction<
                        'static,
                        outbox_core::sqlx::Sqlite,
                    >,
                          e: &Received| {
                        let first_call = {
                            let mut calls = calls.lock().unwrap();
                            let seen = calls.entry(e.id.clone()).or_default();
                            seen.push(e.redelivered);
                            seen.len() == 1
                        };
                        let fail = first_call && e.id == fail_once;
                        Box::pin(async move {
                            outbox_core::sqlx::query(
                                "INSERT INTO got (id, subject, payload, n, redelivered) \
                                 VALUES (?, ?, ?, ?, ?)",
                            )
                            .bind(&e.id)
                            .bind(&e.subject)
                            .bind(&e.payload)
                            .bind(e.headers.get("n"))
                            .bind(e.redelivered)
                            .execute(&mut **tx)
                            .await
                            .map_err(|e| e.to_string())?;
                            if fail {
                                return Err("the ledger is closed (once)".to_owned());
                            }
                            Ok(())
                        })
                    },
                )
                .await
        }
    });

    let got = async || -> i64 {
        outbox_core::sqlx::query_scalar("SELECT COUNT(*) FROM got")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    until(
        "every message handled",
        Duration::from_secs(60),
        async || got().await == N as i64 + 1,
    )
    .await;
    // Until the consumer has every message acknowledged (the duplicate included).
    until(
        "every message acknowledged",
        Duration::from_secs(30),
        async || {
            let info = js
                .get_stream(&name)
                .await
                .unwrap()
                .get_consumer::<consumer::pull::Config>("billing")
                .await
                .unwrap()
                .info()
                .await
                .unwrap()
                .clone();
            info.num_pending == 0 && info.num_ack_pending == 0
        },
    )
    .await;
    stop.send(()).unwrap();
    let consumed = running.await.unwrap().unwrap();
    println!("consumed: {consumed:?}");

    assert_eq!(consumed.processed, N as u64 + 1, "{consumed:?}");
    assert_eq!(
        consumed.skipped, 1,
        "the second copy of event 7: {consumed:?}"
    );
    assert_eq!(consumed.handler_failed, 1, "{consumed:?}");
    assert_eq!(consumed.without_id, 1, "{consumed:?}");
    assert_eq!((consumed.database_failed, consumed.ack_failed), (0, 0));
    assert_eq!(got().await, N as i64 + 1);

    let calls = calls.lock().unwrap().clone();
    assert_eq!(
        calls.len(),
        N + 1,
        "one id per message, the duplicate's shared"
    );
    assert_eq!(
        calls[&ids[3]],
        [false, true],
        "failed once, then redelivered and committed"
    );
    assert_eq!(
        calls[&ids[7]].len(),
        1,
        "the re-published copy never reached the handler"
    );
    for id in ids.iter().filter(|id| **id != ids[3]) {
        assert_eq!(calls[id], [false], "{id}: one call");
    }
    let foreign: Vec<&String> = calls.keys().filter(|id| !ids.contains(id)).collect();
    assert_eq!(foreign.len(), 1);
    assert!(
        foreign[0].starts_with(&format!("stream:{name}:")),
        "recorded under its stream sequence: {}",
        foreign[0]
    );

    let rows: Vec<(String, String, Vec<u8>, Option<String>)> =
        outbox_core::sqlx::query_as("SELECT id, subject, payload, n FROM got")
            .fetch_all(&pool)
            .await
            .unwrap();
    let by_id: HashMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    for (id, subject, payload, n) in &rows {
        let Some(&i) = by_id.get(id.as_str()) else {
            assert_eq!(payload.as_slice(), b"no id");
            continue;
        };
        assert_eq!(subject, &events[i].subject);
        assert_eq!(payload, &events[i].payload.to_bytes(), "payload of {i}");
        assert_eq!(n.as_deref(), Some(i.to_string().as_str()));
    }
    let recorded: i64 = outbox_core::sqlx::query_scalar(
        "SELECT COUNT(*) FROM outbox_inbox WHERE consumer = 'billing'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(recorded, N as i64 + 1, "the inbox holds each id once");
    assert!(DEFAULT_NAK_DELAY > Duration::ZERO);

    js.delete_stream(&name).await.unwrap();
}
