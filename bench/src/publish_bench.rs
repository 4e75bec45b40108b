//! The outbox's relays (`outbox::publish`: NATS JetStream, RabbitMQ) beside a plain client
//! of each broker that publishes the same events with the same confirm window, in the same
//! run.
//!
//! ```sh
//! cargo run --release -p outbox-bench --features publish --bin publish_bench -- \
//!     [--n 20000] [--window 32] [--rounds 3] [--only nats|rabbitmq] [--no-postgres] \
//!     [--nats URL] [--amqp URL] [--postgres-url URL] [--json FILE]
//! ```
//!
//! Brokers: NATS JetStream at `--nats` (default `nats://127.0.0.1:4222`) and RabbitMQ at
//! `--amqp` (default `amqp://guest:guest@127.0.0.1:5672/%2f`). Every measure publishes into
//! a stream (NATS: file storage, one replica, the default 2-minute duplicate window) or a
//! durable exchange and queue (RabbitMQ: a direct exchange, a durable classic queue bound to
//! the routing key) made for it alone; after the measure the stream (queue) must hold
//! exactly `--n` messages, else the bench panics with both numbers, and it is deleted.
//!
//! Each round runs, per broker, one after the other (so they alternate):
//!
//! * `plain`: the broker's client publishing the events with at most `--window` (W)
//!   unacknowledged at once, waiting for every ack — the confirm discipline of the relay,
//!   so the window is the same. NATS: one task keeping W `PubAckFuture`s in flight
//!   (`publish_with_headers`, `Nats-Msg-Id` and `Content-Type` as the relay sets them);
//!   RabbitMQ: W confirm-mode channels on one connection, each with one publish in flight
//!   (mandatory, persistent, `message_id`, `content_type`, `timestamp`), as the relay's
//!   channel pool does. Channel opening is timed, as it is in the relay's drain;
//! * `outbox`: the same events enqueued on a fresh SQLite file (`enqueue_many`, one
//!   transaction, not timed), then `drain()` with the relay registered at
//!   `QueueOptions::new().concurrency(W)`; rate = events / drain time;
//! * `outbox.ordered`: the same with an order key per event, 1,000 keys interleaved
//!   (event i has key i % 1000);
//! * `outbox.pg×4` (with the bench's `postgres` feature, unless `--no-postgres`): the events
//!   enqueued on a fresh PostgreSQL database (`--postgres-url`, default
//!   `OUTBOX_TEST_POSTGRES_URL` or `postgres://postgres@127.0.0.1:5432/test`; the database
//!   is created for the measure and dropped after it), drained by 4 outbox instances in
//!   this process at once — each with its own pool, its own relay (its own broker
//!   connection) and concurrency W, so up to 4 × W publishes are in flight. For comparison:
//!   Namastack publishes about 10,000 events/s with 4 instances on PostgreSQL 17.
//!
//! Rates are the median of `--rounds` rounds; each ratio is the median of the rounds' own
//! ratios. Targets: `outbox` ≥ 0.8 × `plain`; `outbox.ordered` ≥ 0.7 × `outbox`. Beside each
//! rate the CPU time per event of this process (clients, relays, SQLite; not the brokers',
//! nor PostgreSQL's), from `/proc/self/stat`. `--json FILE` writes every figure in the
//! shape of the main bench's.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use futures::{stream::FuturesUnordered, StreamExt as _};
use lapin::{
    options::{
        BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, ExchangeDeleteOptions,
        QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
    },
    types::FieldTable,
    uri::AMQPUri,
    BasicProperties, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};
use outbox::{
    backend::Backend,
    prelude::*,
    publish::{
        nats::{
            async_nats::{self, header::NATS_MESSAGE_ID, jetstream::Context, HeaderMap},
            ensure_stream, NatsRelay, StreamSettings,
        },
        rabbitmq::RabbitRelay,
        Event,
    },
    Handler, SqliteBackend,
};
use serde::Serialize;

/// Order keys of the ordered measure.
const KEYS: usize = 1_000;
/// Outbox instances of the PostgreSQL measure.
#[cfg(feature = "postgres")]
const INSTANCES: usize = 4;
const TARGET_OUTBOX: f64 = 0.8;
const TARGET_ORDERED: f64 = 0.7;
/// The routing key (RabbitMQ) and last tokens of the subject (NATS).
const ROUTING_KEY: &str = "orders.paid";

/// A name no other measure (or run) uses: letters, digits, `_` and `-` only, so it is a
/// valid stream name and subject token too.
fn unique(what: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    format!(
        "outbox_publish_bench_{what}_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The event's data: about 300 bytes of compact JSON.
fn data(i: u64) -> serde_json::Value {
    serde_json::json!({
        "order": format!("ord_{i:012}"),
        "customer": format!("cus_{:012}", i % 997),
        "status": "paid",
        "amount_cents": 4200 + i % 100,
        "currency": "EUR",
        "paid_at": "2026-11-29T10:00:00Z",
        "lines": [
            { "sku": "SKU-0001", "qty": 1, "cents": 3900 },
            { "sku": "SKU-0002", "qty": 1, "cents": 300 + i % 100 }
        ],
        "shipping": { "method": "standard", "country": "DE", "postcode": "10115" },
    })
}

/// `n` events on `subject`, with key `k{i % 1000}` when `keyed`.
fn events(n: u64, subject: &str, keyed: bool) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let event = Event::json(subject, &data(i)).expect("JSON");
            if keyed {
                event.key(format!("k{}", i as usize % KEYS))
            } else {
                event
            }
        })
        .collect()
}

/// A 26-character message id, as long as the outbox's (ULIDs).
fn plain_id(i: usize) -> String {
    format!("plain{i:021}")
}

/// User + system CPU time of this process so far (`/proc/self/stat`).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Fields 14 and 15 (utime, stime), counted from the state (field 3) at index 0.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// A measure's result.
#[derive(Clone, Copy)]
struct Rate {
    per_second: f64,
    /// CPU µs of this process per event.
    cpu_us: f64,
}

/// The clocks at the start of a measure.
struct Clock(Instant, Duration);

impl Clock {
    fn start() -> Self {
        Clock(Instant::now(), cpu())
    }

    fn rate(self, n: u64) -> Rate {
        let wall = self.0.elapsed().as_secs_f64();
        Rate {
            per_second: n as f64 / wall,
            cpu_us: cpu().saturating_sub(self.1).as_secs_f64() * 1e6 / n as f64,
        }
    }
}

// ---------------------------------------------------------------------------------------
// The outbox's drains

/// `events` enqueued on a fresh SQLite file in one transaction (not timed), then drained
/// by `relay` at concurrency `window`: the drain's rate.
async fn drained_sqlite<H>(events: &[Event], relay: H, window: usize) -> Rate
where
    H: Handler<Event, ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let pool = outbox::sqlite::connect(&url).await.unwrap();
    let backend = SqliteBackend::new(pool.clone());
    Outbox::new(backend.clone()).migrate().await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    outbox::enqueue_many(&mut *tx, events).await.unwrap();
    tx.commit().await.unwrap();
    let outbox = Outbox::new(backend)
        .register_with::<Event, _>(relay, QueueOptions::new().concurrency(window));
    let rate = timed_drain(&[outbox], events.len() as u64).await;
    pool.close().await;
    rate
}

/// Drains every outbox at once; the rate from the start to the end of the last drain.
/// Panics unless they delivered `n` events together.
async fn timed_drain<B: Backend>(outboxes: &[Outbox<B>], n: u64) -> Rate {
    let clock = Clock::start();
    let reports = futures::future::join_all(outboxes.iter().map(|o| o.drain())).await;
    let rate = clock.rate(n);
    let reports: Vec<_> = reports.into_iter().map(|r| r.expect("drain")).collect();
    let delivered: u64 = reports.iter().map(|r| r.counts.delivered).sum();
    assert_eq!(delivered, n, "events the relay delivered: {reports:?}");
    rate
}

#[cfg(feature = "postgres")]
mod pg {
    //! Fresh PostgreSQL databases and the drain by several outbox instances.

    use sqlx::{Connection as _, Executor as _};

    use super::*;

    /// The server the databases are made on.
    pub fn admin_url(arg: Option<&str>) -> String {
        arg.map(str::to_owned)
            .or_else(|| std::env::var("OUTBOX_TEST_POSTGRES_URL").ok())
            .unwrap_or_else(|| outbox::postgres::DEFAULT_URL.to_owned())
    }

    fn with_database(url: &str, db: &str) -> String {
        let (base, query) = url
            .split_once('?')
            .map_or((url, None), |(b, q)| (b, Some(q)));
        let cut = base.rfind('/').expect("a database URL has a path");
        match query {
            Some(q) => format!("{}/{db}?{q}", &base[..cut]),
            None => format!("{}/{db}", &base[..cut]),
        }
    }

    async fn execute(admin: &str, sql: String) {
        let mut c = sqlx::PgConnection::connect(admin)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL unreachable at {admin}: {e}"));
        c.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(sql)))
            .await
            .unwrap();
        c.close().await.unwrap();
    }

    /// `events` enqueued on a fresh database in one transaction (not timed), then drained
    /// by one outbox per relay of `relays`, each with its own pool, at concurrency
    /// `window` each, all at once; the database is dropped after.
    pub async fn drained<H>(admin: &str, events: &[Event], relays: Vec<H>, window: usize) -> Rate
    where
        H: Handler<Event, ()>,
    {
        let name = unique("pg");
        execute(admin, format!("CREATE DATABASE {name}")).await;
        let url = with_database(admin, &name);
        let pool = outbox::postgres::connect(&url).await.unwrap();
        Outbox::new(outbox::PostgresBackend::new(pool.clone()))
            .migrate()
            .await
            .unwrap();
        let mut tx = pool.begin().await.unwrap();
        outbox::enqueue_many(&mut *tx, events).await.unwrap();
        tx.commit().await.unwrap();
        pool.close().await;
        let mut pools = Vec::new();
        let mut outboxes = Vec::new();
        for relay in relays {
            let pool = outbox::postgres::connect(&url).await.unwrap();
            outboxes.push(
                Outbox::new(outbox::PostgresBackend::new(pool.clone()))
                    .register_with::<Event, _>(relay, QueueOptions::new().concurrency(window)),
            );
            pools.push(pool);
        }
        let rate = timed_drain(&outboxes, events.len() as u64).await;
        drop(outboxes);
        for pool in pools {
            pool.close().await;
        }
        execute(admin, format!("DROP DATABASE {name} WITH (FORCE)")).await;
        rate
    }
}

// ---------------------------------------------------------------------------------------
// NATS JetStream

/// A stream of its own for one measure: its name and the subject its events go to.
async fn nats_stream(js: &Context) -> (String, String) {
    let name = unique("nats");
    let subject = format!("{name}.{ROUTING_KEY}");
    ensure_stream(js, StreamSettings::new(&name, [format!("{name}.>")]))
        .await
        .unwrap_or_else(|e| panic!("cannot create stream {name}: {e}"));
    (name, subject)
}

/// Checks that the stream holds `n` messages, deletes it, and panics if it did not.
async fn nats_done(js: &Context, name: &str, n: u64, what: &str) {
    let mut stream = js.get_stream(name).await.expect("the measure's stream");
    let state = stream.info().await.expect("stream info").state.clone();
    js.delete_stream(name).await.expect("delete the stream");
    assert_eq!(
        state.messages, n,
        "NATS {what}: stream {name} holds {} messages (last sequence {}) after publishing {n}",
        state.messages, state.last_sequence
    );
}

/// The baseline: `events` published on one connection with at most `window` acks pending.
async fn nats_plain(js: &Context, events: &[Event], window: usize) -> Rate {
    let clock = Clock::start();
    let mut pending = FuturesUnordered::new();
    let acked = |ack: Result<
        async_nats::jetstream::publish::PublishAck,
        async_nats::jetstream::context::PublishError,
    >| {
        let ack = ack.expect("JetStream ack");
        assert!(!ack.duplicate, "a fresh id acknowledged as a duplicate");
    };
    for (i, event) in events.iter().enumerate() {
        if pending.len() >= window {
            acked(pending.next().await.expect("a pending ack"));
        }
        let mut headers = HeaderMap::new();
        headers.insert(NATS_MESSAGE_ID, plain_id(i).as_str());
        if let Some(content_type) = &event.content_type {
            headers.insert("Content-Type", content_type.as_str());
        }
        let payload = bytes::Bytes::from(event.payload.to_bytes());
        let ack = js
            .publish_with_headers(event.subject.clone(), headers, payload)
            .await
            .expect("publish");
        pending.push(std::future::IntoFuture::into_future(ack));
    }
    while let Some(ack) = pending.next().await {
        acked(ack);
    }
    clock.rate(events.len() as u64)
}

struct Nats {
    url: String,
    js: Context,
}

impl Nats {
    async fn connect(url: &str) -> Self {
        let client = async_nats::connect(url)
            .await
            .unwrap_or_else(|e| panic!("NATS unreachable at {url}: {e}"));
        Nats {
            url: url.to_owned(),
            js: async_nats::jetstream::new(client),
        }
    }

    /// A relay on a connection of its own.
    async fn relay(&self) -> NatsRelay {
        NatsRelay::new(Nats::connect(&self.url).await.js)
    }

    async fn measure(&self, m: Measure, args: &Args) -> Rate {
        let (name, subject) = nats_stream(&self.js).await;
        let events = events(args.n, &subject, m == Measure::Ordered);
        let rate = match m {
            Measure::Plain => nats_plain(&self.js, &events, args.window).await,
            Measure::Outbox | Measure::Ordered => {
                drained_sqlite(&events, self.relay().await, args.window).await
            }
            #[cfg(feature = "postgres")]
            Measure::Postgres => {
                let mut relays = Vec::new();
                for _ in 0..INSTANCES {
                    relays.push(self.relay().await);
                }
                pg::drained(&args.postgres, &events, relays, args.window).await
            }
        };
        nats_done(&self.js, &name, args.n, m.name()).await;
        rate
    }
}

// ---------------------------------------------------------------------------------------
// RabbitMQ

/// `uri` parsed, with an IP address kept as the host (amq-protocol would read
/// `127.0.0.1` as `localhost`), as the relay does.
fn amqp_uri(uri: &str) -> AMQPUri {
    let mut parsed: AMQPUri = uri.parse().expect("an AMQP URI");
    let authority = uri
        .split_once("://")
        .map_or("", |(_, rest)| rest)
        .split(['/', '?'])
        .next()
        .unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host_port.trim_start_matches('[').split([']', ':']).next();
    if let Some(ip) = host.and_then(|h| h.parse::<IpAddr>().ok()) {
        parsed.authority.host = ip.to_string();
    }
    parsed
}

async fn amqp_connect(uri: &str) -> Connection {
    Connection::connect_uri(amqp_uri(uri), ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("RabbitMQ unreachable: {e}"))
}

struct Rabbit {
    uri: String,
    /// Declares and deletes the measures' exchanges and queues, and counts their messages.
    admin: lapin::Channel,
    _connection: Connection,
}

impl Rabbit {
    async fn connect(uri: &str) -> Self {
        let connection = amqp_connect(uri).await;
        let admin = connection.create_channel().await.expect("a channel");
        Rabbit {
            uri: uri.to_owned(),
            admin,
            _connection: connection,
        }
    }

    /// A durable direct exchange and a durable queue bound to it for [`ROUTING_KEY`].
    async fn topology(&self) -> (String, String) {
        let (exchange, queue) = (unique("x"), unique("q"));
        self.admin
            .exchange_declare(
                exchange.as_str().into(),
                ExchangeKind::Direct,
                ExchangeDeclareOptions {
                    durable: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the exchange");
        self.admin
            .queue_declare(
                queue.as_str().into(),
                QueueDeclareOptions::durable(),
                FieldTable::default(),
            )
            .await
            .expect("declare the queue");
        self.admin
            .queue_bind(
                queue.as_str().into(),
                exchange.as_str().into(),
                ROUTING_KEY.into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind the queue");
        (exchange, queue)
    }

    /// Checks that the queue holds `n` messages, deletes it and the exchange, and panics
    /// if it did not.
    async fn done(&self, exchange: &str, queue: &str, n: u64, what: &str) {
        let held = self
            .admin
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("the measure's queue")
            .message_count();
        self.admin
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await
            .expect("delete the queue");
        self.admin
            .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
            .await
            .expect("delete the exchange");
        assert_eq!(
            u64::from(held),
            n,
            "RabbitMQ {what}: queue {queue} holds {held} messages after publishing {n}"
        );
    }

    async fn relay(&self, exchange: &str) -> RabbitRelay {
        RabbitRelay::connect(&self.uri, exchange)
            .await
            .expect("the relay's connection")
    }

    async fn measure(&self, m: Measure, args: &Args) -> Rate {
        let (exchange, queue) = self.topology().await;
        let events = events(args.n, ROUTING_KEY, m == Measure::Ordered);
        let rate = match m {
            Measure::Plain => {
                let connection = Arc::new(amqp_connect(&self.uri).await);
                rabbit_plain(&connection, &exchange, events, args.window).await
            }
            Measure::Outbox | Measure::Ordered => {
                drained_sqlite(&events, self.relay(&exchange).await, args.window).await
            }
            #[cfg(feature = "postgres")]
            Measure::Postgres => {
                let mut relays = Vec::new();
                for _ in 0..INSTANCES {
                    relays.push(self.relay(&exchange).await);
                }
                pg::drained(&args.postgres, &events, relays, args.window).await
            }
        };
        self.done(&exchange, &queue, args.n, m.name()).await;
        rate
    }
}

/// The baseline: `window` confirm-mode channels on `connection`, each with one publish in
/// flight (mandatory, persistent, message_id), as the relay's pool publishes.
async fn rabbit_plain(
    connection: &Arc<Connection>,
    exchange: &str,
    events: Vec<Event>,
    window: usize,
) -> Rate {
    let n = events.len() as u64;
    let events = Arc::new(events);
    let next = Arc::new(AtomicUsize::new(0));
    let exchange: lapin::types::ShortString = exchange.into();
    let clock = Clock::start();
    let mut workers = Vec::new();
    for _ in 0..window {
        let connection = Arc::clone(connection);
        let (events, next, exchange) = (Arc::clone(&events), Arc::clone(&next), exchange.clone());
        workers.push(tokio::spawn(async move {
            let channel = connection.create_channel().await.expect("a channel");
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await
                .expect("confirm mode");
            let options = BasicPublishOptions {
                mandatory: true,
                immediate: false,
            };
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(event) = events.get(i) else { break };
                let timestamp = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                let mut properties = BasicProperties::default()
                    .with_delivery_mode(2)
                    .with_message_id(plain_id(i).as_str().into())
                    .with_timestamp(timestamp)
                    .with_headers(FieldTable::default());
                if let Some(content_type) = &event.content_type {
                    properties = properties.with_content_type(content_type.as_str().into());
                }
                let confirmation = channel
                    .basic_publish(
                        exchange.clone(),
                        event.subject.as_str().into(),
                        options,
                        &event.payload.to_bytes(),
                        properties,
                    )
                    .await
                    .expect("publish")
                    .await
                    .expect("confirm");
                assert!(
                    matches!(confirmation, Confirmation::Ack(None)),
                    "not a plain ack: {confirmation:?}"
                );
            }
            channel
        }));
    }
    let mut channels = Vec::new();
    for worker in workers {
        channels.push(worker.await.expect("publisher"));
    }
    let rate = clock.rate(n);
    for channel in channels {
        let _ = channel.close(200, "done".into()).await;
    }
    rate
}

// ---------------------------------------------------------------------------------------
// The run

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Measure {
    Plain,
    Outbox,
    Ordered,
    #[cfg(feature = "postgres")]
    Postgres,
}

impl Measure {
    fn name(self) -> &'static str {
        match self {
            Measure::Plain => "plain",
            Measure::Outbox => "outbox",
            Measure::Ordered => "outbox.ordered",
            #[cfg(feature = "postgres")]
            Measure::Postgres => "outbox.pg×4",
        }
    }

    /// Where the outbox's queue is.
    fn backend(self) -> &'static str {
        match self {
            #[cfg(feature = "postgres")]
            Measure::Postgres => "postgres",
            _ => "sqlite",
        }
    }

    /// The figure this one is a ratio of, and its target.
    fn baseline(self) -> Option<(Measure, Option<f64>)> {
        match self {
            Measure::Plain => None,
            Measure::Outbox => Some((Measure::Plain, Some(TARGET_OUTBOX))),
            Measure::Ordered => Some((Measure::Outbox, Some(TARGET_ORDERED))),
            #[cfg(feature = "postgres")]
            Measure::Postgres => Some((Measure::Plain, None)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Broker {
    Nats,
    Rabbit,
}

impl Broker {
    fn name(self) -> &'static str {
        match self {
            Broker::Nats => "nats",
            Broker::Rabbit => "rabbitmq",
        }
    }
}

#[derive(Clone)]
struct Args {
    n: u64,
    window: usize,
    rounds: usize,
    only: Option<Broker>,
    nats: String,
    amqp: String,
    #[cfg(feature = "postgres")]
    postgres: String,
    #[cfg(feature = "postgres")]
    with_postgres: bool,
    json: Option<String>,
}

const USAGE: &str = "usage: publish_bench [--n N] [--window W] [--rounds K] \
    [--only nats|rabbitmq] [--no-postgres] [--nats URL] [--amqp URL] [--postgres-url URL] \
    [--json FILE]";

fn args() -> Args {
    let mut postgres_url = None;
    let mut args = Args {
        n: 20_000,
        window: 32,
        rounds: 3,
        only: None,
        nats: "nats://127.0.0.1:4222".into(),
        amqp: "amqp://guest:guest@127.0.0.1:5672/%2f".into(),
        #[cfg(feature = "postgres")]
        postgres: String::new(),
        #[cfg(feature = "postgres")]
        with_postgres: true,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| panic!("{a} takes a value\n{USAGE}"))
        };
        match a.as_str() {
            "--n" => args.n = value().parse().expect("--n: a number"),
            "--window" => args.window = value().parse().expect("--window: a number"),
            "--rounds" => args.rounds = value().parse().expect("--rounds: a number"),
            "--only" => {
                args.only = Some(match value().as_str() {
                    "nats" => Broker::Nats,
                    "rabbitmq" => Broker::Rabbit,
                    other => panic!("--only {other}: nats or rabbitmq"),
                })
            }
            "--nats" => args.nats = value(),
            "--amqp" => args.amqp = value(),
            "--postgres-url" => postgres_url = Some(value()),
            "--no-postgres" => {
                #[cfg(feature = "postgres")]
                {
                    args.with_postgres = false;
                }
            }
            "--json" => args.json = Some(value()),
            other => panic!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    assert!(
        args.n > 0 && args.window > 0 && args.rounds > 0,
        "--n, --window and --rounds are at least 1"
    );
    #[cfg(feature = "postgres")]
    {
        args.postgres = pg::admin_url(postgres_url.as_deref());
    }
    #[cfg(not(feature = "postgres"))]
    drop(postgres_url);
    args
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One figure, in the shape of the main bench's JSON.
#[derive(Serialize)]
struct Figure {
    workload: String,
    backend: &'static str,
    n: u64,
    value: f64,
    unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    met: Option<bool>,
    runs: Vec<f64>,
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(std::io::stderr)
        .init();
    let args = args();
    let brokers: Vec<Broker> = [Broker::Nats, Broker::Rabbit]
        .into_iter()
        .filter(|b| args.only.is_none_or(|o| o == *b))
        .collect();
    #[allow(unused_mut)]
    let mut measures = vec![Measure::Plain, Measure::Outbox, Measure::Ordered];
    #[cfg(feature = "postgres")]
    if args.with_postgres {
        measures.push(Measure::Postgres);
    }

    let nats = Nats::connect(&args.nats).await;
    let rabbit = Rabbit::connect(&args.amqp).await;
    let sample = events(1, "a.b", false)[0].payload.to_bytes().len();
    let server = nats.js.client().server_info();
    println!(
        "{} events per measure, payload {sample} bytes of JSON, window {}, {} rounds; \
         NATS {} at {} (JetStream, file stream, 1 replica), RabbitMQ at {} (durable direct \
         exchange, durable classic queue)",
        args.n, args.window, args.rounds, server.version, args.nats, args.amqp
    );
    println!(
        "plain = the broker's client with the relay's confirm window: NATS one connection \
         with at most {w} PubAckFutures pending; RabbitMQ {w} confirm-mode channels with one \
         publish in flight each (mandatory, persistent, message_id), as the relay's pool",
        w = args.window
    );
    #[cfg(feature = "postgres")]
    if args.with_postgres {
        println!(
            "outbox.pg×4 = {INSTANCES} outbox instances in this process on one fresh \
             PostgreSQL database ({}), each with its own pool, relay and concurrency {} \
             (up to {} publishes in flight)",
            args.postgres,
            args.window,
            INSTANCES * args.window
        );
    }

    // Warm: the connections, the brokers' first streams and queues, the allocator.
    let warm = Args {
        n: args.n.min(2_000),
        ..args.clone()
    };
    for &b in &brokers {
        match b {
            Broker::Nats => nats.measure(Measure::Plain, &warm).await,
            Broker::Rabbit => rabbit.measure(Measure::Plain, &warm).await,
        };
    }

    let mut runs: HashMap<(Broker, Measure), Vec<Rate>> = HashMap::new();
    for round in 1..=args.rounds {
        let mut line = format!("round {round}:");
        for &b in &brokers {
            for &m in &measures {
                let r = match b {
                    Broker::Nats => nats.measure(m, &args).await,
                    Broker::Rabbit => rabbit.measure(m, &args).await,
                };
                line += &format!(
                    "\n  {:<9} {:<15} {:>7.0} events/s  {:>6.1} µs CPU per event",
                    b.name(),
                    m.name(),
                    r.per_second,
                    r.cpu_us
                );
                runs.entry((b, m)).or_default().push(r);
            }
        }
        println!("{line}");
    }

    println!();
    println!(
        "| broker | figure | events/s per round | median events/s | ratio | target | met | CPU µs per event |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut figures = Vec::new();
    let mut missed = Vec::new();
    for &b in &brokers {
        for &m in &measures {
            let rates: Vec<f64> = runs[&(b, m)].iter().map(|r| r.per_second).collect();
            let cpu: Vec<f64> = runs[&(b, m)].iter().map(|r| r.cpu_us).collect();
            let per_round = rates
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(" / ");
            let workload = format!("publish.{}.{}", b.name(), m.name());
            let mut figure = Figure {
                workload: workload.clone(),
                backend: m.backend(),
                n: args.n,
                value: median(&rates),
                unit: "msgs/s",
                baseline: None,
                baseline_value: None,
                ratio: None,
                target: None,
                met: None,
                runs: rates.clone(),
            };
            let (ratio, target, met) = match m.baseline() {
                None => ("1.00".to_owned(), "—".to_owned(), "—".to_owned()),
                Some((base, target)) => {
                    let base_rates: Vec<f64> =
                        runs[&(b, base)].iter().map(|r| r.per_second).collect();
                    let ratios: Vec<f64> =
                        rates.iter().zip(&base_rates).map(|(r, p)| r / p).collect();
                    let ratio = median(&ratios);
                    figure.baseline = Some(format!("publish.{}.{}", b.name(), base.name()));
                    figure.baseline_value = Some(median(&base_rates));
                    figure.ratio = Some(ratio);
                    let (target_text, met) = match target {
                        Some(t) => {
                            let met = ratio >= t;
                            figure.target = Some(format!(">= {t}"));
                            figure.met = Some(met);
                            if !met {
                                missed.push(format!(
                                    "{} {}: {ratio:.2} of {} (target >= {t})",
                                    b.name(),
                                    m.name(),
                                    base.name()
                                ));
                            }
                            (
                                format!("≥ {t} × {}", base.name()),
                                if met { "yes" } else { "NO" }.to_owned(),
                            )
                        }
                        None => (
                            "— (Namastack: ~10,000/s, 4 instances, PostgreSQL 17)".to_owned(),
                            "—".to_owned(),
                        ),
                    };
                    (format!("{ratio:.2} of {}", base.name()), target_text, met)
                }
            };
            println!(
                "| {} | {} | {per_round} | {:.0} | {ratio} | {target} | {met} | {:.1} |",
                b.name(),
                m.name(),
                figure.value,
                median(&cpu)
            );
            figures.push(figure);
            figures.push(Figure {
                workload: format!("{workload}.cpu"),
                backend: m.backend(),
                n: args.n,
                value: median(&cpu),
                unit: "us/msg",
                baseline: None,
                baseline_value: None,
                ratio: None,
                target: None,
                met: None,
                runs: cpu,
            });
        }
    }
    if missed.is_empty() {
        println!("every target met");
    } else {
        println!("MISSED: {}", missed.join("; "));
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&figures).unwrap())
            .expect("write the JSON file");
        println!("figures written to {path}");
    }
}
