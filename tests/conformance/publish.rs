//! Events through a real broker, on each database: the outbox's relay publishes `Event`s
//! enqueued in the database, a consumer reads them back through the inbox on the same
//! database, and every case counts what arrived.
//!
//! * 100,000 events, one relay (concurrency 32): every id reaches the handler once;
//! * a relay process SIGKILLed ten times at random moments, then run to the end: nothing
//!   lost, re-publishes stored twice (past NATS's 1 s duplicate window; every one on
//!   RabbitMQ) skipped by the inbox;
//! * a private broker killed and restarted mid-run: every event once, none dead-lettered;
//! * 1,000 keys × 50 events in two relay processes: each key's events arrive in order; a
//!   poisoned key (its first event refused for good) holds only its own later events.
//!
//! Those are the sizes with `OUTBOX_PUBLISH_FULL=1` (`scripts/soak-publish.sh`; through
//! NATS, 3–4 minutes per database). Without it — `cargo test`, CI — the cases run
//! with a tenth of the events (10,000; 1,000 keys × 5), the ten kills, the restart and the
//! poisoned key unchanged: see [`sizes`].
//!
//! The broker-facing parts are the [`Broker`] trait, and every case runs on both brokers:
//! NATS JetStream ([`Nats`]) on the machine's server at 127.0.0.1:4222 (a stream of each
//! run's own, deleted at the end) or, to restart it, a private `nats-server` on a free
//! port; RabbitMQ ([`Rabbit`], `publish/rabbitmq.rs`) on the machine's node at
//! 127.0.0.1:5672 or a private node. Relay child processes are the test binary again
//! (`child_worker`, role `publish-run` or `publish-drain`, the broker named in
//! `OUTBOX_PUB_BROKER`).

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    future::Future,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use futures::{future::BoxFuture, StreamExt};
use outbox::{
    backend::Backend,
    enqueue_many,
    prelude::*,
    publish::{
        nats::{
            async_nats::{self, jetstream},
            ensure_stream, NatsConsumer, NatsRelay, StreamSettings,
        },
        Event, Inbox, Received, EVENT_TYPE,
    },
    store::LiveFilter,
    Admin, Breaker, DeadLetterFilter, Retention, RetrySchedule,
};

use super::{harness::Harness, processes::spawn_child_with};

mod rabbitmq;
pub use rabbitmq::Rabbit;

// ---------------------------------------------------------------------------------------
// Sizes

/// How many events each case relays.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Events of the bulk case.
    pub bulk: usize,
    /// Events of the case whose relay is killed ten times.
    pub killed: usize,
    /// Events of the case whose broker restarts.
    pub restarted: usize,
    /// Events per key of the ordering case (1,000 keys).
    pub per_key: i64,
}

/// `OUTBOX_PUBLISH_FULL=1`: the sizes the outbox promises (100,000 events; 1,000 keys ×
/// 50). Unset or `0`: a tenth, what `cargo test` and CI run in a few minutes per database.
pub fn sizes() -> Sizes {
    match std::env::var("OUTBOX_PUBLISH_FULL").as_deref() {
        Ok("1") => Sizes {
            bulk: 100_000,
            killed: 20_000,
            restarted: 10_000,
            per_key: 50,
        },
        Ok("0") | Err(_) => Sizes {
            bulk: 10_000,
            killed: 10_000,
            restarted: 4_000,
            per_key: 5,
        },
        Ok(other) => panic!("OUTBOX_PUBLISH_FULL={other}: use 1 (the promised sizes) or 0"),
    }
}

// ---------------------------------------------------------------------------------------
// The consumer's table, per database

/// A row of table `received`: the event's id (the primary key: a second insert of an id
/// fails), its key and sequence from the payload, and its arrival number at the consumer.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    pub key: String,
    pub seq: i64,
    pub arrival: i64,
}

/// Table `received` on one database.
pub trait Table: sqlx::Database {
    /// Creates it.
    fn create(pool: &sqlx::Pool<Self>) -> BoxFuture<'_, ()>;
    /// Inserts `row` in the caller's transaction.
    fn insert(conn: &mut Self::Connection, row: Row) -> BoxFuture<'_, Result<(), sqlx::Error>>;
    /// Every row.
    fn rows(pool: &sqlx::Pool<Self>) -> BoxFuture<'_, Vec<Row>>;
    /// How many rows.
    fn count(pool: &sqlx::Pool<Self>) -> BoxFuture<'_, i64>;
}

macro_rules! table {
    ($feature:literal, $db:ty, $ddl:literal, $insert:literal) => {
        #[cfg(feature = $feature)]
        impl Table for $db {
            fn create(pool: &sqlx::Pool<Self>) -> BoxFuture<'_, ()> {
                Box::pin(async move {
                    sqlx::query($ddl).execute(pool).await.unwrap();
                })
            }
            fn insert(
                conn: &mut Self::Connection,
                row: Row,
            ) -> BoxFuture<'_, Result<(), sqlx::Error>> {
                Box::pin(async move {
                    sqlx::query($insert)
                        .bind(row.id)
                        .bind(row.key)
                        .bind(row.seq)
                        .bind(row.arrival)
                        .execute(conn)
                        .await
                        .map(|_| ())
                })
            }
            fn rows(pool: &sqlx::Pool<Self>) -> BoxFuture<'_, Vec<Row>> {
                Box::pin(async move {
                    let rows: Vec<(String, String, i64, i64)> =
                        sqlx::query_as("SELECT id, k, seq, arrival FROM received")
                            .fetch_all(pool)
                            .await
                            .unwrap();
                    rows.into_iter()
                        .map(|(id, key, seq, arrival)| Row {
                            id,
                            key,
                            seq,
                            arrival,
                        })
                        .collect()
                })
            }
            fn count(pool: &sqlx::Pool<Self>) -> BoxFuture<'_, i64> {
                Box::pin(async move {
                    sqlx::query_scalar("SELECT COUNT(*) FROM received")
                        .fetch_one(pool)
                        .await
                        .unwrap()
                })
            }
        }
    };
}

table!(
    "sqlite",
    sqlx::Sqlite,
    "CREATE TABLE received (id TEXT PRIMARY KEY, k TEXT NOT NULL, seq INTEGER NOT NULL, \
     arrival INTEGER NOT NULL)",
    "INSERT INTO received (id, k, seq, arrival) VALUES (?, ?, ?, ?)"
);
table!(
    "postgres",
    sqlx::Postgres,
    "CREATE TABLE received (id TEXT PRIMARY KEY, k TEXT NOT NULL, seq BIGINT NOT NULL, \
     arrival BIGINT NOT NULL)",
    "INSERT INTO received (id, k, seq, arrival) VALUES ($1, $2, $3, $4)"
);
table!(
    "mysql",
    sqlx::MySql,
    "CREATE TABLE received (id VARCHAR(255) PRIMARY KEY, k VARCHAR(100) NOT NULL, \
     seq BIGINT NOT NULL, arrival BIGINT NOT NULL)",
    "INSERT INTO received (id, k, seq, arrival) VALUES (?, ?, ?, ?)"
);

/// The consumer's handler: counts its calls, numbers arrivals, and inserts the event's row
/// in the inbox's transaction.
#[derive(Clone, Default)]
pub struct Recorder {
    calls: Arc<AtomicU64>,
    arrivals: Arc<AtomicU64>,
}

impl Recorder {
    /// Handler calls so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// The handler: `{"k": key, "seq": n}` into `received`.
    pub fn record<'t, DB: Table>(
        &self,
        tx: &'t mut sqlx::Transaction<'static, DB>,
        event: &'t Received,
    ) -> BoxFuture<'t, Result<(), String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let arrival = self.arrivals.fetch_add(1, Ordering::SeqCst) as i64;
        let parsed = event
            .json::<serde_json::Value>()
            .map_err(|e| format!("not the test's JSON: {e}"))
            .and_then(|v| match (v["k"].as_str(), v["seq"].as_i64()) {
                (Some(k), Some(seq)) => Ok((k.to_owned(), seq)),
                _ => Err(format!("no k and seq in {v}")),
            });
        let id = event.id.clone();
        Box::pin(async move {
            let (key, seq) = parsed?;
            let row = Row {
                id,
                key,
                seq,
                arrival,
            };
            DB::insert(&mut **tx, row).await.map_err(|e| e.to_string())
        })
    }
}

/// What the consumer did, as the cases report it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Consumed {
    /// Handled for the first time.
    pub processed: u64,
    /// Redeliveries and second copies the inbox skipped.
    pub skipped: u64,
    /// Handler or database failures (nak'd, redelivered).
    pub failed: u64,
    /// Handled messages whose ack the broker did not confirm.
    pub ack_failed: u64,
    /// Errors the message stream yielded (while the broker was away).
    pub stream_errors: u64,
}

// ---------------------------------------------------------------------------------------
// The broker

/// The broker-facing side of the cases.
#[allow(async_fn_in_trait)]
pub trait Broker: Sized + Send + Sync + 'static {
    /// `nats`, `rabbitmq`: the value of `OUTBOX_PUB_BROKER` for relay child processes.
    const NAME: &'static str;

    /// A destination of this run's own on the machine's broker, capturing
    /// [`subject`](Self::subject)s; with the broker's de-duplication window when it has one
    /// (`None`: its default).
    async fn shared(tag: &str, duplicate_window: Option<Duration>) -> Self;
    /// The same on a broker this test starts, which [`restart`](Self::restart) can kill.
    async fn private(tag: &str) -> Self;
    /// The connection a relay child process makes from [`relay_env`](Self::relay_env).
    async fn from_env() -> Self;
    /// What a relay child process needs to reach the broker.
    fn relay_env(&self) -> Vec<(&'static str, String)>;

    /// The subject (routing key) of key `key`'s events.
    fn subject(&self, key: &str) -> String;
    /// A subject the relay cannot deliver: refused for good (a dead letter at the first
    /// attempt) when [`REFUSED_FOR_GOOD`](Self::REFUSED_FOR_GOOD), else retried for as
    /// long as its retries last.
    fn refused_subject(&self, key: &str) -> String;
    /// Whether the relay dead-letters [`refused_subject`](Self::refused_subject) at once.
    const REFUSED_FOR_GOOD: bool;

    /// `outbox` with this broker's relay for [`Event`].
    fn register<B: Backend>(&self, outbox: Outbox<B>, options: QueueOptions) -> Outbox<B>;

    /// Reads this run's events through the inbox with `recorder` (`lanes` at once, events
    /// of one subject in order) until `stop` fires.
    fn consume<DB>(
        &self,
        inbox: Inbox<DB>,
        recorder: Recorder,
        lanes: usize,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> impl Future<Output = Consumed>
    where
        DB: Table,
        DB::Connection: outbox::InsertMessages;

    /// Messages the broker holds for this run (`None` while it cannot say).
    async fn stored(&self) -> Option<u64>;
    /// Whether the consumer has acknowledged every message stored so far.
    async fn drained(&self) -> bool;
    /// Kills the private broker (SIGKILL), keeps it down for `down`, starts it again on
    /// the same port and store.
    async fn restart(&self, down: Duration);
    /// Deletes what the run created.
    async fn teardown(self);
}

/// The machine's NATS server.
const SHARED_NATS: &str = "nats://127.0.0.1:4222";

/// The nats-server binary for private servers.
const NATS_SERVER: &str = "/usr/sbin/nats-server";

/// A name no other run uses: `prefix`, the process id, a counter and the time.
fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
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

/// A nats-server of the test's own: its port and store survive a restart.
struct PrivateNats {
    child: Option<Child>,
    port: u16,
    store: PathBuf,
}

impl PrivateNats {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let store = std::env::temp_dir().join(unique("outbox-conf-nats-"));
        std::fs::create_dir_all(&store).unwrap();
        let mut server = Self {
            child: None,
            port,
            store,
        };
        server.up();
        server
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn up(&mut self) {
        let child = Command::new(NATS_SERVER)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {NATS_SERVER}: {e}"));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "{NATS_SERVER} did not listen on port {} within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateNats {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

/// NATS JetStream: a file stream of the run's own capturing `<prefix>.>`, the outbox's
/// `NatsRelay`, and a durable pull consumer read through `NatsConsumer`.
pub struct Nats {
    js: jetstream::Context,
    stream: String,
    prefix: String,
    consumer: String,
    url: String,
    server: Option<std::sync::Mutex<PrivateNats>>,
}

impl Nats {
    async fn connect(url: &str) -> jetstream::Context {
        let client = tokio::time::timeout(Duration::from_secs(10), async_nats::connect(url))
            .await
            .unwrap_or_else(|_| panic!("the NATS server at {url} did not answer within 10 s"))
            .unwrap_or_else(|e| {
                panic!(
                    "cannot reach the NATS server at {url} ({e}): these cases need \
                     `nats-server -js` there"
                )
            });
        jetstream::new(client)
    }

    async fn with_stream(
        url: String,
        tag: &str,
        window: Option<Duration>,
        server: Option<PrivateNats>,
    ) -> Self {
        let js = Self::connect(&url).await;
        let stream = unique(&format!("OUTBOX_CONF_{tag}_"));
        let prefix = unique(&format!("conf{}", tag.to_lowercase()));
        let mut settings = StreamSettings::new(stream.clone(), [format!("{prefix}.>")]);
        if let Some(window) = window {
            settings = settings.duplicate_window(window);
        }
        ensure_stream(&js, settings)
            .await
            .unwrap_or_else(|e| panic!("the NATS server at {url} needs JetStream (-js): {e}"));
        Self {
            js,
            stream,
            prefix,
            consumer: "conformance".to_owned(),
            url,
            server: server.map(std::sync::Mutex::new),
        }
    }

    async fn consumer_info(&self) -> Option<jetstream::consumer::Info> {
        let stream = self.js.get_stream(&self.stream).await.ok()?;
        let mut consumer = stream
            .get_consumer::<jetstream::consumer::pull::Config>(&self.consumer)
            .await
            .ok()?;
        consumer.info().await.ok().cloned()
    }
}

impl Broker for Nats {
    const NAME: &'static str = "nats";
    const REFUSED_FOR_GOOD: bool = true;

    async fn shared(tag: &str, duplicate_window: Option<Duration>) -> Self {
        Self::with_stream(SHARED_NATS.to_owned(), tag, duplicate_window, None).await
    }

    async fn private(tag: &str) -> Self {
        let server = PrivateNats::start();
        Self::with_stream(server.url(), tag, None, Some(server)).await
    }

    async fn from_env() -> Self {
        let url = std::env::var("OUTBOX_PUB_NATS_URL").expect("OUTBOX_PUB_NATS_URL");
        Self {
            js: Self::connect(&url).await,
            stream: String::new(),
            prefix: String::new(),
            consumer: String::new(),
            url,
            server: None,
        }
    }

    fn relay_env(&self) -> Vec<(&'static str, String)> {
        vec![("OUTBOX_PUB_NATS_URL", self.url.clone())]
    }

    fn subject(&self, key: &str) -> String {
        format!("{}.{key}", self.prefix)
    }

    fn refused_subject(&self, key: &str) -> String {
        // `$` subjects are the server's own: NatsRelay refuses them for good.
        format!("${}.{key}", self.prefix)
    }

    fn register<B: Backend>(&self, outbox: Outbox<B>, options: QueueOptions) -> Outbox<B> {
        outbox.register_with::<Event, _>(NatsRelay::new(self.js.clone()), options)
    }

    async fn consume<DB>(
        &self,
        inbox: Inbox<DB>,
        recorder: Recorder,
        lanes: usize,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> Consumed
    where
        DB: Table,
        DB::Connection: outbox::InsertMessages,
    {
        let consumer = self
            .js
            .get_stream(&self.stream)
            .await
            .unwrap()
            .get_or_create_consumer(
                &self.consumer,
                jetstream::consumer::pull::Config {
                    durable_name: Some(self.consumer.clone()),
                    ack_policy: jetstream::consumer::AckPolicy::Explicit,
                    ack_wait: Duration::from_secs(30),
                    max_ack_pending: 10_000,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let messages = consumer.messages().await.unwrap().take_until(stop);
        let consumed = NatsConsumer::new(inbox)
            .concurrency(lanes)
            .nak_delay(Duration::from_millis(200), Duration::from_secs(2))
            .run(messages, move |tx, event| recorder.record::<DB>(tx, event))
            .await
            .unwrap_or_else(|e| panic!("the consumer stopped: {e}"));
        Consumed {
            processed: consumed.processed,
            skipped: consumed.skipped,
            failed: consumed.handler_failed + consumed.database_failed,
            ack_failed: consumed.ack_failed,
            stream_errors: consumed.stream_errors,
        }
    }

    async fn stored(&self) -> Option<u64> {
        let mut stream = self.js.get_stream(&self.stream).await.ok()?;
        Some(stream.info().await.ok()?.state.messages)
    }

    async fn drained(&self) -> bool {
        self.consumer_info()
            .await
            .is_some_and(|info| info.num_pending == 0 && info.num_ack_pending == 0)
    }

    async fn restart(&self, down: Duration) {
        let server = self
            .server
            .as_ref()
            .expect("only a private broker is restarted");
        server.lock().unwrap().kill();
        tokio::time::sleep(down).await;
        server.lock().unwrap().up();
    }

    async fn teardown(self) {
        let _ = self.js.delete_stream(&self.stream).await;
        drop(self.server);
    }
}

// ---------------------------------------------------------------------------------------
// Relay child processes

/// A relay child process (`child_worker` with role `publish-run`: relays until killed;
/// `publish-drain`: relays what is due, then exits), for the broker in `OUTBOX_PUB_BROKER`.
pub async fn child<H: Harness>(role: &str, url: &str) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
    let h = H::attach(url).await;
    match std::env::var("OUTBOX_PUB_BROKER").as_deref() {
        Ok(Nats::NAME) => relay_child::<H, Nats>(&h, role).await,
        Ok(Rabbit::NAME) => relay_child::<H, Rabbit>(&h, role).await,
        other => panic!("unknown OUTBOX_PUB_BROKER {other:?}"),
    }
}

async fn relay_child<H: Harness, B: Broker>(h: &H, role: &str) {
    let broker = B::from_env().await;
    let concurrency = std::env::var("OUTBOX_PUB_CONCURRENCY")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(16);
    let outbox = relay_outbox(&broker, h.backend(), concurrency);
    match role {
        "publish-drain" => {
            outbox.drain().await.unwrap();
        }
        "publish-run" => outbox.run_until(std::future::pending()).await.unwrap(),
        other => panic!("unknown role {other}"),
    }
}

/// An outbox relaying `Event`s through `broker` with [`relay_options`], keeping delivered
/// rows (to count their attempts).
fn relay_outbox<B: Broker, K: Backend>(broker: &B, backend: K, concurrency: usize) -> Outbox<K> {
    broker
        .register(Outbox::new(backend), relay_options(concurrency))
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shutdown_timeout(Duration::from_secs(1))
}

/// The relay's options in every case: short leases (a killed relay's events come back
/// within seconds), a short retry, a breaker that probes often.
fn relay_options(concurrency: usize) -> QueueOptions {
    QueueOptions::new()
        .concurrency(concurrency)
        .heartbeat_interval(Duration::from_secs(1))
        .missed_heartbeats(3)
        .retry(RetrySchedule::fixed([Duration::from_millis(500)]))
        .breaker(Breaker::new().probe_backoff(Duration::from_millis(500), Duration::from_secs(2)))
}

fn spawn_relay<B: Broker>(broker: &B, backend: &str, url: &str, role: &str) -> Child {
    let mut env = broker.relay_env();
    env.push(("OUTBOX_PUB_BROKER", B::NAME.to_owned()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    spawn_child_with(backend, role, url, &env)
}

// ---------------------------------------------------------------------------------------
// Helpers

/// Events of keys `k0…`: `{"k": key, "seq": n}` on the key's subject.
fn event<B: Broker>(broker: &B, key: &str, seq: i64) -> Event {
    Event::json(
        broker.subject(key),
        &serde_json::json!({"k": key, "seq": seq}),
    )
    .unwrap()
}

/// Enqueues `events` in transactions of `per_tx`; their ids, in order.
async fn enqueue<H: Harness>(h: &H, events: &[Event], per_tx: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(events.len());
    for chunk in events.chunks(per_tx) {
        let mut tx = h.pool().begin().await.unwrap();
        let done = enqueue_many(&mut *tx, chunk).await.unwrap();
        tx.commit().await.unwrap();
        ids.extend(done.iter().map(|e| e.id().to_string()));
    }
    ids
}

async fn live<H: Harness>(h: &H) -> u64 {
    Admin::new(h.backend())
        .messages()
        .count(&LiveFilter::all())
        .await
        .unwrap()
}

async fn dead<H: Harness>(h: &H) -> u64 {
    Admin::new(h.backend())
        .dead_letters()
        .count(&DeadLetterFilter::default())
        .await
        .unwrap()
}

/// Waits until `done` says so, looking every 100 ms; panics after `limit`.
async fn until(what: &str, limit: Duration, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within {limit:?}");
}

/// The consumer's lanes (transactions at once): SQLite has one writer, so more lanes only
/// queue for its lock (and slow the relay's writes); PostgreSQL and MariaDB commit
/// concurrent transactions together (their fsyncs shared).
fn lanes<H: Harness>() -> usize {
    if H::NAME == "sqlite" {
        4
    } else {
        32
    }
}

/// A fresh database with table `received`, a broker destination, and the inbox.
async fn setup<H: Harness>() -> (H, Inbox<H::Db>)
where
    H::Db: Table,
{
    let h = H::new().await;
    <H::Db as Table>::create(h.pool()).await;
    let inbox = Inbox::new(h.pool().clone(), "conformance");
    (h, inbox)
}

/// Checks that `rows` hold each of `ids` once and nothing else, and that the handler was
/// called once per id.
fn assert_each_once(rows: &[Row], ids: &[String], recorder: &Recorder, what: &str) {
    let got: HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let want: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let lost = want.difference(&got).count();
    let unknown = got.difference(&want).count();
    assert_eq!(
        (lost, unknown),
        (0, 0),
        "{what}: {lost} enqueued events never reached the handler, {unknown} unknown ids"
    );
    assert_eq!(rows.len(), ids.len(), "{what}: one row per id");
    assert_eq!(
        recorder.calls(),
        ids.len() as u64,
        "{what}: the handler ran once per event (no duplicate reached it)"
    );
}

// ---------------------------------------------------------------------------------------
// The cases

/// 100,000 events (10,000 in CI, see [`sizes`]) enqueued in transactions of 10,000
/// (`enqueue_many`: inserts of 1,000 rows), drained by one relay (concurrency 32) while a
/// consumer (4 lanes on SQLite, 32 elsewhere) reads them through the inbox: every enqueued
/// id reaches the handler once, none lost, the stream holds them all.
pub async fn every_event_reaches_the_inbox_once<H: Harness, B: Broker>()
where
    H::Db: Table,
{
    let n = sizes().bulk;
    let lanes = lanes::<H>();
    let started = Instant::now();
    let (h, inbox) = setup::<H>().await;
    let broker = B::shared("BULK", None).await;
    let events: Vec<Event> = (0..n as i64)
        .map(|i| event(&broker, &format!("k{}", i % 256), i))
        .collect();
    let enqueue_started = Instant::now();
    let ids = enqueue(&h, &events, 10_000).await;
    let enqueued_in = enqueue_started.elapsed();
    drop(events);

    let recorder = Recorder::default();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let relay = relay_outbox(&broker, h.backend(), 32);
    let consuming = broker.consume(inbox, recorder.clone(), lanes, stopped);
    let driving = async {
        let relay_started = Instant::now();
        relay
            .run_until(until(
                "every event relayed",
                Duration::from_secs(600),
                async || live(&h).await == 0,
            ))
            .await
            .unwrap();
        let relayed_in = relay_started.elapsed();
        until(
            "every event consumed",
            Duration::from_secs(600),
            async || <H::Db as Table>::count(h.pool()).await >= n as i64 && broker.drained().await,
        )
        .await;
        let consumed_in = relay_started.elapsed();
        stop.send(()).unwrap();
        (relayed_in, consumed_in)
    };
    let (consumed, (relayed_in, consumed_in)) = tokio::join!(consuming, driving);

    let rows = <H::Db as Table>::rows(h.pool()).await;
    let stored = broker.stored().await.unwrap();
    println!(
        "{} / {}: {n} events enqueued in {enqueued_in:?}; relayed in {relayed_in:?} \
         ({:.0} events/s, concurrency 32) while consumed; all consumed after {consumed_in:?} \
         ({:.0} events/s, {lanes} lanes); stream holds {stored}; {consumed:?}; case took {:?}",
        H::NAME,
        B::NAME,
        n as f64 / relayed_in.as_secs_f64(),
        n as f64 / consumed_in.as_secs_f64(),
        started.elapsed()
    );
    assert_each_once(&rows, &ids, &recorder, "the bulk events");
    assert_eq!(consumed.processed, n as u64, "{consumed:?}");
    assert_eq!(
        (consumed.failed, consumed.ack_failed),
        (0, 0),
        "{consumed:?}"
    );
    assert!(stored >= n as u64, "the stream holds {stored}");
    assert_eq!(dead(&h).await, 0);
    broker.teardown().await;
}

/// A relay child process draining 20,000 events (10,000 in CI, see [`sizes`]) is SIGKILLed
/// ten times at random moments (0.1 to 1 s after its first publish, or sooner once it has
/// published a random share of the events), a new one started after each kill, then one more
/// runs to the end; the stream's duplicate window is 1 s, so an event whose publish a
/// killed relay never recorded is re-published after its lease (3 s) and stored twice
/// (RabbitMQ stores every re-publish). The consumer runs throughout: every event reaches
/// the handler once, each
/// extra stored copy is skipped by the inbox.
pub async fn the_relay_killed_ten_times_loses_nothing<H: Harness, B: Broker>()
where
    H::Db: Table,
{
    let n = sizes().killed;
    const KILLS: usize = 10;
    let started = Instant::now();
    let (h, inbox) = setup::<H>().await;
    let broker = B::shared("KILL", Some(Duration::from_secs(1))).await;
    let events: Vec<Event> = (0..n as i64)
        .map(|i| event(&broker, &format!("k{}", i % 64), i))
        .collect();
    let ids = enqueue(&h, &events, 10_000).await;
    drop(events);

    let recorder = Recorder::default();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let consuming = broker.consume(inbox, recorder.clone(), lanes::<H>(), stopped);
    let driving = async {
        let mut kills = Vec::new();
        for _ in 0..KILLS {
            let before = broker.stored().await.unwrap();
            let mut relay = spawn_relay(&broker, H::NAME, &h.url(), "publish-run");
            until(
                "the relay process publishing",
                Duration::from_secs(60),
                async || broker.stored().await.unwrap() > before,
            )
            .await;
            // Killed at a random moment: 0.1 to 1 s after its first publish, or sooner
            // once it has published a random share of a thirtieth of the events (so
            // events are left for every kill however fast the relay is).
            let published = broker.stored().await.unwrap();
            let share = fastrand::u64(20..(n / (3 * KILLS)) as u64);
            let at = Instant::now() + Duration::from_millis(fastrand::u64(100..1_000));
            while Instant::now() < at && broker.stored().await.unwrap() < published + share {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            relay.kill().expect("SIGKILL the relay"); // Child::kill sends SIGKILL on Unix
            relay.wait().unwrap();
            kills.push(broker.stored().await.unwrap());
        }
        let mut last = spawn_relay(&broker, H::NAME, &h.url(), "publish-run");
        until(
            "every event relayed",
            Duration::from_secs(120),
            async || live(&h).await == 0,
        )
        .await;
        let _ = last.kill();
        let _ = last.wait();
        until(
            "every event consumed",
            Duration::from_secs(120),
            async || <H::Db as Table>::count(h.pool()).await >= n as i64 && broker.drained().await,
        )
        .await;
        stop.send(()).unwrap();
        kills
    };
    let (consumed, kills) = tokio::join!(consuming, driving);

    let rows = <H::Db as Table>::rows(h.pool()).await;
    let stored = broker.stored().await.unwrap();
    // Delivered rows are kept: each with its attempts.
    let attempts: i64 = h.message_times().await.iter().map(|m| m.3).sum();
    println!(
        "{} / {}: {n} events, relay killed {KILLS} times (broker held {kills:?} at the \
         kills); {} attempts beyond the first (claimed by a relay that was killed); {} \
         events stored twice (published again after a kill: NATS drops a re-publish within \
         its 1 s window, RabbitMQ keeps each) and their second copies skipped by the inbox \
         ({}); the other {} attempts dropped by the window or not published before the \
         kill; {consumed:?}; case took {:?}",
        H::NAME,
        B::NAME,
        attempts - n as i64,
        stored - n as u64,
        consumed.skipped,
        (attempts - n as i64 - (stored as i64 - n as i64)).max(0),
        started.elapsed()
    );
    assert_each_once(&rows, &ids, &recorder, "the relay killed ten times");
    assert_eq!(consumed.processed, n as u64, "{consumed:?}");
    assert_eq!(consumed.failed, 0, "{consumed:?}");
    assert!(
        consumed.skipped >= stored - n as u64,
        "every extra stored copy was skipped by the inbox: {consumed:?}, {stored} stored"
    );
    assert_eq!(dead(&h).await, 0);
    broker.teardown().await;
}

/// The private broker is killed while the relay drains 10,000 events (4,000 in CI) and restarted 2 s
/// later on the same port and store: every event reaches the handler once, none is
/// dead-lettered.
pub async fn a_private_broker_restarted_mid_run_loses_nothing<H: Harness, B: Broker>()
where
    H::Db: Table,
{
    let n = sizes().restarted;
    let started = Instant::now();
    let (h, inbox) = setup::<H>().await;
    let broker = B::private("RESTART").await;
    let events: Vec<Event> = (0..n as i64)
        .map(|i| event(&broker, &format!("k{}", i % 64), i))
        .collect();
    let ids = enqueue(&h, &events, 10_000).await;
    drop(events);

    let recorder = Recorder::default();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let relay = relay_outbox(&broker, h.backend(), 16);
    // The consumer and the relay both read from / publish to the broker that restarts.
    let consuming = broker.consume(inbox, recorder.clone(), lanes::<H>(), stopped);
    let (relayed, relayed_rx) = tokio::sync::oneshot::channel::<()>();
    let relaying = async {
        relay
            .run_until(async {
                let _ = relayed_rx.await;
            })
            .await
            .unwrap()
    };
    let driving = async {
        until(
            "a quarter of the events stored",
            Duration::from_secs(120),
            async || broker.stored().await.unwrap_or(0) >= (n / 4) as u64,
        )
        .await;
        let at = broker.stored().await.unwrap_or(0);
        broker.restart(Duration::from_secs(2)).await;
        let back = Instant::now();
        until(
            "every event relayed",
            Duration::from_secs(120),
            async || live(&h).await == 0,
        )
        .await;
        let relayed_after = back.elapsed();
        relayed.send(()).unwrap();
        until(
            "every event consumed",
            Duration::from_secs(120),
            async || <H::Db as Table>::count(h.pool()).await >= n as i64 && broker.drained().await,
        )
        .await;
        stop.send(()).unwrap();
        (at, relayed_after, back.elapsed())
    };
    let (consumed, (), (killed_at, relayed_after, consumed_after)) =
        tokio::join!(consuming, relaying, driving);

    let rows = <H::Db as Table>::rows(h.pool()).await;
    let stored = broker.stored().await.unwrap();
    let breakers = Admin::new(h.backend()).breakers().await.unwrap();
    let opened = breakers
        .iter()
        .find(|b| b.name == EVENT_TYPE)
        .map_or(0, |b| b.times_opened);
    println!(
        "{} / {}: {n} events; the broker killed with {killed_at} stored, down 2 s; after \
         its restart every event relayed in {relayed_after:?}, consumed in \
         {consumed_after:?}; the relay's breaker opened {opened} time(s); stream holds \
         {stored}; the inbox skipped {} redeliveries (acks the restart lost); {consumed:?}; \
         case took {:?}",
        H::NAME,
        B::NAME,
        consumed.skipped,
        started.elapsed()
    );
    assert_each_once(&rows, &ids, &recorder, "the broker restarted");
    assert_eq!(consumed.processed, n as u64, "{consumed:?}");
    println!(
        "the consumer's message stream reported {} error(s) while the broker was away",
        consumed.stream_errors
    );
    assert_eq!(dead(&h).await, 0, "nothing dead-lettered for the outage");
    assert!(stored >= n as u64, "the stream holds {stored}");
    broker.teardown().await;
}

/// 1,000 keys × 50 events (× 5 in CI, see [`sizes`]; and a poisoned key whose first event is refused for good),
/// relayed by two child processes at once while one consumer reads the stream, events of
/// one subject (one key) in stream order: every healthy key's events arrive in sequence,
/// the poisoned key's later events stay queued, and `held_keys` names that key alone.
pub async fn two_relays_keep_each_keys_order<H: Harness, B: Broker>()
where
    H::Db: Table,
{
    const KEYS: usize = 1_000;
    let each = sizes().per_key;
    let started = Instant::now();
    let (h, inbox) = setup::<H>().await;
    let broker = B::shared("ORDER", None).await;
    let keys: Vec<String> = (0..KEYS).map(|k| format!("k{k}")).collect();
    let mut ids: HashMap<String, (String, i64)> = HashMap::new();
    for seq in 0..each {
        let mut round: Vec<Event> = keys
            .iter()
            .map(|key| event(&broker, key, seq).key(key.clone()))
            .collect();
        let poison = if seq == 0 {
            Event::json(
                broker.refused_subject("poison"),
                &serde_json::json!({"k": "poison", "seq": seq}),
            )
            .unwrap()
        } else {
            event(&broker, "poison", seq)
        };
        round.push(poison.key("poison"));
        let done = enqueue(&h, &round, round.len()).await;
        for (event, id) in round.iter().zip(done) {
            ids.insert(id, (event.key.clone().unwrap(), seq));
        }
    }
    let enqueued = started.elapsed();

    let recorder = Recorder::default();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let consuming = broker.consume(inbox, recorder.clone(), lanes::<H>(), stopped);
    let driving = async {
        let relay_started = Instant::now();
        let relays: Vec<Child> = (0..2)
            .map(|_| spawn_relay(&broker, H::NAME, &h.url(), "publish-drain"))
            .collect();
        let relays = tokio::task::spawn_blocking(move || {
            relays
                .into_iter()
                .map(|c| c.wait_with_output().unwrap())
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
        for out in &relays {
            assert!(
                out.status.success(),
                "relay process failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let relayed_in = relay_started.elapsed();
        let healthy = (KEYS as i64 * each) as u64;
        until(
            "every healthy key's events consumed",
            Duration::from_secs(300),
            async || {
                <H::Db as Table>::count(h.pool()).await >= healthy as i64 && broker.drained().await
            },
        )
        .await;
        let consumed_in = relay_started.elapsed();
        stop.send(()).unwrap();
        (relayed_in, consumed_in)
    };
    let (consumed, (relayed_in, consumed_in)) = tokio::join!(consuming, driving);

    let rows = <H::Db as Table>::rows(h.pool()).await;
    let mut per_key: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for row in &rows {
        let (key, seq) = ids
            .get(&row.id)
            .unwrap_or_else(|| panic!("unknown id {}", row.id));
        assert_eq!(
            (&row.key, row.seq),
            (key, *seq),
            "the payload of {}",
            row.id
        );
        per_key
            .entry(key.as_str())
            .or_default()
            .push((row.arrival, row.seq));
    }
    assert!(
        !per_key.contains_key("poison"),
        "none of the poisoned key's events was published: {:?}",
        per_key.get("poison")
    );
    assert_eq!(per_key.len(), KEYS, "every healthy key arrived");
    let expected: Vec<i64> = (0..each).collect();
    for (key, arrivals) in &mut per_key {
        arrivals.sort_unstable();
        let seqs: Vec<i64> = arrivals.iter().map(|(_, seq)| *seq).collect();
        assert_eq!(seqs, expected, "key {key}'s events in arrival order");
    }
    assert_eq!(
        recorder.calls(),
        rows.len() as u64,
        "the handler ran once per event"
    );
    assert_eq!(consumed.failed, 0, "{consumed:?}");

    let held = Admin::new(h.backend())
        .messages()
        .held_keys(EVENT_TYPE)
        .await
        .unwrap();
    let held: Vec<(&str, u64)> = held.iter().map(|k| (k.key.as_str(), k.waiting)).collect();
    assert_eq!(
        held,
        [("poison", each as u64 - 1)],
        "the poisoned key alone is held, its later events waiting"
    );
    // The poisoned event: dead at once (NATS refuses a `$` subject for good) or still
    // being retried (RabbitMQ returns an unroutable one); its key's later events wait.
    let (dead, live) = (dead(&h).await, live(&h).await);
    assert_eq!(
        dead + live,
        each as u64,
        "the poisoned key's events stay in the outbox"
    );
    if B::REFUSED_FOR_GOOD {
        assert_eq!(dead, 1, "the poisoned key's refused event");
    }
    println!(
        "{} / {}: {KEYS} keys × {each} events (+ a poisoned key) enqueued in {enqueued:?}; \
         two relay processes in {relayed_in:?} ({:.0} events/s); consumed in order after \
         {consumed_in:?}; {consumed:?}; case took {:?}",
        H::NAME,
        B::NAME,
        rows.len() as f64 / relayed_in.as_secs_f64(),
        started.elapsed()
    );
    broker.teardown().await;
}
