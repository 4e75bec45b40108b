#![cfg(feature = "rabbitmq")]
//! The RabbitMQ relay against real brokers: the machine's RabbitMQ on 127.0.0.1:5672
//! (guest/guest), with exchanges and queues of each test's own, deleted at its end; and a
//! private RabbitMQ node, started by the test in a temporary directory, for the restart.
//! An unreachable broker fails the test, saying which.
//!
//! * 2,000 events from an outbox on a SQLite file reach a durable queue, each once, with
//!   `message_id` = the outbox id, headers, content type, persistent mode and payload;
//! * an unroutable routing key is not marked done: retried, its error names the key;
//! * a full queue that rejects publishes (nack): retried, then delivered;
//! * a missing exchange is retried with a clear message, and once declared the same relay
//!   publishes on a new channel;
//! * a relay over the application's own connection publishes, and once that connection is
//!   closed reports an outage that says it cannot reopen it;
//! * the private node stopped mid-run and started again: every event arrives (duplicates
//!   only with their id), none is dead-lettered, the breaker opened while it was down;
//! * 50 keys × 20 events with 8 workers: each key's events arrive in enqueue order.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::PathBuf,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex, OnceLock,
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use futures::StreamExt;
use lapin::{
    options::{
        BasicAckOptions, BasicConsumeOptions, BasicQosOptions, ExchangeDeclareOptions,
        ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable},
    Channel, Connection, ConnectionProperties, ExchangeKind,
};
use outbox_core::{
    sqlite, Admin, Breaker, DeadLetterFilter, Handler, LiveFilter, LiveState, MessageContext,
    MessageId, Outbox, QueueOptions, RetrySchedule, SqliteBackend,
};
use outbox_publish::{rabbitmq::RabbitRelay, Event, EVENT_TYPE};

/// The machine's RabbitMQ.
const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

// ---------------------------------------------------------------------------------------
// Helpers.

/// A name no other test (or run) uses.
fn unique(what: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "outbox-publish-test.{what}.{}.{}.{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

async fn broker_at(uri: &str, which: &str) -> Connection {
    Connection::connect(uri, ConnectionProperties::default())
        .await
        .unwrap_or_else(|e| panic!("{which} is not reachable at {uri}: {e}"))
}

/// A connection to the machine's RabbitMQ, or a failure that says it must run.
async fn broker() -> Connection {
    broker_at(
        AMQP,
        "the machine's RabbitMQ (127.0.0.1:5672, guest/guest; the tests need it running)",
    )
    .await
}

/// A durable exchange of `kind` and a durable queue bound to it with `binding`.
async fn topology(channel: &Channel, kind: ExchangeKind, binding: &str) -> (String, String) {
    let exchange = unique("x");
    let queue = unique("q");
    channel
        .exchange_declare(
            exchange.as_str().into(),
            kind,
            ExchangeDeclareOptions {
                durable: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    channel
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions::durable(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    channel
        .queue_bind(
            queue.as_str().into(),
            exchange.as_str().into(),
            binding.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    (exchange, queue)
}

async fn remove(channel: &Channel, exchange: &str, queue: &str) {
    channel
        .queue_delete(queue.into(), QueueDeleteOptions::default())
        .await
        .unwrap();
    channel
        .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
        .await
        .unwrap();
}

/// A message as the consumer received it.
#[derive(Debug, Clone)]
struct Got {
    id: String,
    routing_key: String,
    headers: BTreeMap<String, String>,
    content_type: Option<String>,
    delivery_mode: Option<u8>,
    timestamp: Option<u64>,
    payload: Vec<u8>,
}

/// A consumer acknowledging everything it reads from a queue, in arrival order.
struct Collector {
    seen: Arc<Mutex<Vec<Got>>>,
}

impl Collector {
    async fn start(channel: &Channel, queue: &str) -> Self {
        channel
            .basic_qos(500, BasicQosOptions::default())
            .await
            .unwrap();
        let mut consumer = channel
            .basic_consume(
                queue.into(),
                unique("consumer").as_str().into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Some(Ok(delivery)) = consumer.next().await {
                let p = &delivery.properties;
                let headers = p
                    .headers()
                    .as_ref()
                    .map(|table| {
                        table
                            .inner()
                            .iter()
                            .map(|(name, value)| {
                                let value = match value {
                                    AMQPValue::LongString(s) => {
                                        String::from_utf8_lossy(s.as_bytes()).into_owned()
                                    }
                                    other => format!("not a long string: {other:?}"),
                                };
                                (name.to_string(), value)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let got = Got {
                    id: p
                        .message_id()
                        .as_ref()
                        .map(|s| s.to_string())
                        .unwrap_or_default(),
                    routing_key: delivery.routing_key.to_string(),
                    headers,
                    content_type: p.content_type().as_ref().map(|s| s.to_string()),
                    delivery_mode: *p.delivery_mode(),
                    timestamp: *p.timestamp(),
                    payload: delivery.data.clone(),
                };
                sink.lock().unwrap().push(got);
                if delivery.ack(BasicAckOptions::default()).await.is_err() {
                    return;
                }
            }
        });
        Self { seen }
    }

    fn seen(&self) -> Vec<Got> {
        self.seen.lock().unwrap().clone()
    }

    fn len(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

/// Polls `check` every 50 ms until it holds or `within` passed.
async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A SQLite file in a directory of its own, removed at the end.
struct Db {
    dir: PathBuf,
    pool: outbox_core::sqlx::SqlitePool,
}

impl Db {
    async fn new() -> Self {
        let dir = std::env::temp_dir().join(unique("db"));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("outbox.db").display());
        let pool = sqlite::connect(&url).await.unwrap();
        Self { dir, pool }
    }

    fn backend(&self) -> SqliteBackend {
        SqliteBackend::new(self.pool.clone())
    }

    /// Enqueues `events` in one transaction; their ids in order.
    async fn enqueue(&self, events: &[Event]) -> Vec<MessageId> {
        let mut tx = self.pool.begin().await.unwrap();
        let mut ids = Vec::with_capacity(events.len());
        for event in events {
            let enqueued = event.enqueue(&mut *tx).await.unwrap();
            ids.push(enqueued.id().clone());
        }
        tx.commit().await.unwrap();
        ids
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An outbox on `db` publishing events through `handler` with `options`; quick polls.
async fn outbox_with<Args: 'static>(
    db: &Db,
    handler: impl outbox_core::HandlerFn<Event, (), Args>,
    options: QueueOptions,
) -> Outbox<SqliteBackend> {
    let outbox = Outbox::new(db.backend())
        .idle_poll(Duration::from_millis(50), Duration::from_millis(200))
        .register_with::<Event, _>(handler, options);
    outbox.migrate().await.unwrap();
    outbox
}

async fn live_count(admin: &Admin<SqliteBackend>) -> u64 {
    admin.messages().count(&LiveFilter::all()).await.unwrap()
}

async fn dead_count(admin: &Admin<SqliteBackend>) -> u64 {
    admin
        .dead_letters()
        .count(&DeadLetterFilter::default())
        .await
        .unwrap()
}

/// Counter totals by `name{label=value,…}`, as recorded by every test of this binary.
type Totals = Arc<Mutex<HashMap<String, u64>>>;

struct Recorded {
    key: String,
    totals: Totals,
}

impl metrics::CounterFn for Recorded {
    fn increment(&self, value: u64) {
        *self
            .totals
            .lock()
            .unwrap()
            .entry(self.key.clone())
            .or_default() += value;
    }

    fn absolute(&self, value: u64) {
        self.totals.lock().unwrap().insert(self.key.clone(), value);
    }
}

struct Recorder(Totals);

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
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        metrics::Counter::from_arc(Arc::new(Recorded {
            key: format!("{}{{{}}}", key.name(), labels.join(",")),
            totals: Arc::clone(&self.0),
        }))
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

/// The relay's publish counter for `outcome`, in this process so far.
fn published(outcome: &str) -> u64 {
    static TOTALS: OnceLock<Totals> = OnceLock::new();
    let totals = TOTALS.get_or_init(|| {
        let totals = Totals::default();
        metrics::set_global_recorder(Recorder(Arc::clone(&totals)))
            .expect("no other recorder in this test binary");
        totals
    });
    let key = format!("outbox_publish_total{{broker=rabbitmq,outcome={outcome}}}");
    totals.lock().unwrap().get(&key).copied().unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// The tests.

/// 2,000 events through a topic exchange to one durable queue: each arrives once, with its
/// outbox id, headers, content type, persistent mode, timestamp and payload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_events_arrive_once_each_intact() {
    const N: usize = 2_000;
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Topic, "orders.#").await;
    let collector = Collector::start(&admin_conn.create_channel().await.unwrap(), &queue).await;

    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    assert_eq!(relay.exchange(), exchange);
    assert_eq!(
        relay.broker().as_deref(),
        Some("amqp://127.0.0.1:5672/%2f"),
        "the broker as shown: no credentials"
    );
    let outbox = outbox_with(&db, relay, QueueOptions::new().concurrency(16)).await;
    let events: Vec<Event> = (0..N)
        .map(|i| {
            let subject = format!("orders.{}.created", i % 7);
            let event = match i % 3 {
                0 => {
                    Event::json(subject, &serde_json::json!({ "order": i, "note": "ü ✓" })).unwrap()
                }
                1 => Event::bytes(subject, vec![0, 159, (i % 256) as u8, 255])
                    .content_type("application/octet-stream"),
                _ => Event::bytes(subject, format!("plain {i}").into_bytes()),
            };
            event.header("tenant", "acme").header("n", i.to_string())
        })
        .collect();
    let ids = db.enqueue(&events).await;
    let expected: HashMap<String, &Event> = ids
        .iter()
        .map(ToString::to_string)
        .zip(events.iter())
        .collect();

    let published_before = published("published");
    let started = Instant::now();
    outbox
        .run_until(async {
            let all = eventually(Duration::from_secs(180), || async { collector.len() >= N }).await;
            assert!(all, "{} of {N} events arrived", collector.len());
        })
        .await
        .unwrap();
    let took = started.elapsed();
    // Anything published twice would have arrived by now.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let seen = collector.seen();
    assert_eq!(seen.len(), N, "each event exactly once");
    let distinct: HashSet<&str> = seen.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(distinct.len(), N);
    for got in &seen {
        let event = expected
            .get(&got.id)
            .unwrap_or_else(|| panic!("message_id `{}` is no outbox id", got.id));
        assert_eq!(got.routing_key, event.subject);
        assert_eq!(got.payload, event.payload.to_bytes(), "{}", got.id);
        assert_eq!(got.content_type, event.content_type, "{}", got.id);
        assert_eq!(got.delivery_mode, Some(2), "persistent");
        assert_eq!(
            got.headers, event.headers,
            "headers of {}: exactly the event's",
            got.id
        );
        assert!(
            got.timestamp.is_some_and(|t| t > 1_600_000_000),
            "a timestamp: {:?}",
            got.timestamp
        );
    }
    let admin = outbox.admin();
    assert_eq!(live_count(&admin).await, 0, "every event marked done");
    assert_eq!(dead_count(&admin).await, 0);
    assert!(
        published("published") >= published_before + N as u64,
        "outbox_publish_total{{broker=rabbitmq,outcome=published}} counts them"
    );
    println!(
        "{N} events published and consumed in {took:?} ({:.0}/s)",
        N as f64 / took.as_secs_f64()
    );
    remove(&channel, &exchange, &queue).await;
}

/// An event no queue is bound for comes back (basic.return): it stays queued for a retry,
/// its error names the exchange and routing key, and it never reaches a queue; an event
/// published beside it is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unroutable_event_is_retried_and_names_its_routing_key() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Direct, "bound.key").await;
    let collector = Collector::start(&admin_conn.create_channel().await.unwrap(), &queue).await;

    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    let outbox = outbox_with(
        &db,
        relay,
        QueueOptions::new()
            .concurrency(4)
            .retry(RetrySchedule::fixed([Duration::from_secs(3600)])),
    )
    .await;
    let ids = db
        .enqueue(&[
            Event::bytes("nobody.listens", b"lost?".to_vec()),
            Event::bytes("bound.key", b"routed".to_vec()),
        ])
        .await;
    let admin = outbox.admin();
    let (unroutable, routed) = (&ids[0], &ids[1]);
    let returned_before = published("unroutable");

    outbox
        .run_until(async {
            let settled = eventually(Duration::from_secs(30), || async {
                let failed = admin
                    .messages()
                    .show(unroutable)
                    .await
                    .unwrap()
                    .is_some_and(|m| m.message.last_error.is_some());
                failed && collector.len() >= 1
            })
            .await;
            assert!(settled, "the unroutable event failed and the other arrived");
        })
        .await
        .unwrap();

    let detail = admin
        .messages()
        .show(unroutable)
        .await
        .unwrap()
        .expect("the unroutable event is not marked done");
    let m = &detail.message;
    assert_eq!(m.state, LiveState::Retrying, "{m:?}");
    assert_eq!(m.attempts, 1, "{m:?}");
    let error = m.last_error.clone().unwrap();
    for words in [
        "nobody.listens",
        exchange.as_str(),
        "bind a queue",
        "NO_ROUTE",
    ] {
        assert!(error.contains(words), "the error says `{words}`: {error}");
    }
    assert!(
        admin.messages().show(routed).await.unwrap().is_none(),
        "the routable event is done"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = collector.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].id, routed.to_string());
    assert_eq!(dead_count(&admin).await, 0);
    assert!(
        admin.breakers().await.unwrap().is_empty(),
        "an unroutable event is no outage"
    );
    assert!(published("unroutable") > returned_before);
    remove(&channel, &exchange, &queue).await;
}

/// A queue that is full and rejects publishes (`x-overflow: reject-publish`) nacks the
/// event: it is retried, not marked done, and once the queue has room it goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nacked_event_is_retried() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let exchange = unique("x");
    let queue = unique("full");
    channel
        .exchange_declare(
            exchange.as_str().into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    let mut arguments = FieldTable::default();
    arguments.insert("x-max-length".into(), AMQPValue::LongInt(1));
    arguments.insert(
        "x-overflow".into(),
        AMQPValue::LongString("reject-publish".into()),
    );
    channel
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions::durable(),
            arguments,
        )
        .await
        .unwrap();
    channel
        .queue_bind(
            queue.as_str().into(),
            exchange.as_str().into(),
            "k".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();

    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    let outbox = outbox_with(
        &db,
        relay,
        QueueOptions::new()
            .concurrency(1)
            .retry(RetrySchedule::fixed([Duration::from_secs(3600)])),
    )
    .await;
    let admin = outbox.admin();
    let nacked_before = published("nacked");
    let ids = db
        .enqueue(&[
            Event::bytes("k", b"fits".to_vec()),
            Event::bytes("k", b"does not fit".to_vec()),
        ])
        .await;
    let (fits, rejected) = (&ids[0], &ids[1]);

    outbox
        .run_until(async {
            let settled = eventually(Duration::from_secs(30), || async {
                let done = admin.messages().show(fits).await.unwrap().is_none();
                let failed = admin
                    .messages()
                    .show(rejected)
                    .await
                    .unwrap()
                    .is_some_and(|m| m.message.last_error.is_some());
                done && failed
            })
            .await;
            assert!(settled, "the first fits, the second is refused");
            let m = admin
                .messages()
                .show(rejected)
                .await
                .unwrap()
                .unwrap()
                .message;
            assert_eq!(m.state, LiveState::Retrying, "{m:?}");
            let error = m.last_error.unwrap();
            assert!(error.contains("basic.nack"), "{error}");
            assert!(published("nacked") > nacked_before);
            assert!(admin.breakers().await.unwrap().is_empty(), "no outage");

            // Room in the queue: the retry goes out.
            let collector =
                Collector::start(&admin_conn.create_channel().await.unwrap(), &queue).await;
            let drained =
                eventually(Duration::from_secs(10), || async { collector.len() >= 1 }).await;
            assert!(drained);
            assert!(admin.messages().retry_now(rejected).await.unwrap());
            let both = eventually(Duration::from_secs(30), || async { collector.len() >= 2 }).await;
            assert!(both, "{:?}", collector.seen());
            let order: Vec<String> = collector.seen().into_iter().map(|g| g.id).collect();
            assert_eq!(order, [fits.to_string(), rejected.to_string()]);
        })
        .await
        .unwrap();
    assert_eq!(live_count(&admin).await, 0);
    remove(&channel, &exchange, &queue).await;
}

/// A relay whose exchange does not exist: the broker closes the channel (404), the event
/// is retried with a message naming the exchange (no outage: the breaker stays shut);
/// once the exchange is declared, the same relay publishes it and the next event on a new
/// channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_exchange_is_retried_and_the_relay_recovers_its_channel() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let exchange = unique("missing");
    let queue = unique("q");

    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    let outbox = outbox_with(
        &db,
        relay,
        QueueOptions::new()
            .concurrency(4)
            .retry(RetrySchedule::fixed([Duration::from_secs(3600)])),
    )
    .await;
    let admin = outbox.admin();
    let missing_before = published("no_exchange");
    let first = db
        .enqueue(&[Event::bytes("orders.created", b"first".to_vec())])
        .await
        .remove(0);

    outbox
        .run_until(async {
            let failed = eventually(Duration::from_secs(30), || async {
                admin
                    .messages()
                    .show(&first)
                    .await
                    .unwrap()
                    .is_some_and(|m| m.message.last_error.is_some())
            })
            .await;
            assert!(failed, "the event failed");
            let m = admin
                .messages()
                .show(&first)
                .await
                .unwrap()
                .unwrap()
                .message;
            assert_eq!(m.state, LiveState::Retrying, "{m:?}");
            let error = m.last_error.unwrap();
            for words in [
                format!("no exchange `{exchange}`"),
                "404".to_owned(),
                "declare it".to_owned(),
            ] {
                assert!(error.contains(&words), "the error says `{words}`: {error}");
            }
            assert!(
                admin.breakers().await.unwrap().is_empty(),
                "a missing exchange is no outage"
            );
            assert!(published("no_exchange") > missing_before);

            // The exchange appears: the waiting event goes out, and so does a new one.
            channel
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
                .unwrap();
            channel
                .queue_declare(
                    queue.as_str().into(),
                    QueueDeclareOptions::durable(),
                    FieldTable::default(),
                )
                .await
                .unwrap();
            channel
                .queue_bind(
                    queue.as_str().into(),
                    exchange.as_str().into(),
                    "orders.created".into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await
                .unwrap();
            let collector =
                Collector::start(&admin_conn.create_channel().await.unwrap(), &queue).await;
            let second = db
                .enqueue(&[Event::bytes("orders.created", b"second".to_vec())])
                .await
                .remove(0);
            assert!(admin.messages().retry_now(&first).await.unwrap());
            let both = eventually(Duration::from_secs(30), || async { collector.len() >= 2 }).await;
            assert!(both, "{:?}", collector.seen());
            let ids: HashSet<String> = collector.seen().into_iter().map(|g| g.id).collect();
            assert_eq!(
                ids,
                HashSet::from([first.to_string(), second.to_string()]),
                "the retried event and the next one, through the same relay"
            );
        })
        .await
        .unwrap();
    assert_eq!(live_count(&admin).await, 0);
    assert_eq!(dead_count(&admin).await, 0);
    remove(&channel, &exchange, &queue).await;
}

/// A relay over the application's own connection publishes on channels of its own, and
/// once that connection is closed says so as an outage (it cannot reopen it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_over_the_applications_connection() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Direct, "k").await;
    let collector = Collector::start(&admin_conn.create_channel().await.unwrap(), &queue).await;

    let shared = Arc::new(broker().await);
    let relay = RabbitRelay::new(Arc::clone(&shared), &exchange).unwrap();
    assert_eq!(relay.broker(), None);
    assert!(RabbitRelay::new(broker().await, "x".repeat(256))
        .unwrap_err()
        .to_string()
        .contains("256 bytes"));
    let db = Db::new().await;
    let outbox = outbox_with(
        &db,
        relay,
        QueueOptions::new()
            .concurrency(2)
            .retry(RetrySchedule::fixed([Duration::from_secs(3600)])),
    )
    .await;
    let admin = outbox.admin();
    let first = db
        .enqueue(&[Event::bytes("k", b"1".to_vec())])
        .await
        .remove(0);
    outbox
        .run_until(async {
            let arrived =
                eventually(Duration::from_secs(30), || async { collector.len() >= 1 }).await;
            assert!(arrived);
            assert_eq!(collector.seen()[0].id, first.to_string());

            shared
                .close(200, "the application closes it".into())
                .await
                .unwrap();
            let second = db
                .enqueue(&[Event::bytes("k", b"2".to_vec())])
                .await
                .remove(0);
            let failed = eventually(Duration::from_secs(30), || async {
                admin
                    .messages()
                    .show(&second)
                    .await
                    .unwrap()
                    .is_some_and(|m| m.message.last_error.is_some())
            })
            .await;
            assert!(failed);
            let error = admin
                .messages()
                .show(&second)
                .await
                .unwrap()
                .unwrap()
                .message
                .last_error
                .unwrap();
            assert!(
                error.contains("given to RabbitRelay::new is closed")
                    && error.contains("RabbitRelay::connect"),
                "{error}"
            );
        })
        .await
        .unwrap();
    assert_eq!(collector.len(), 1);
    assert_eq!(dead_count(&admin).await, 0, "an outage kills nothing");
    remove(&channel, &exchange, &queue).await;
}

/// 50 keys × 20 events, enqueued round-robin, published by 8 workers: the consumer sees
/// every key's events in enqueue order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_one_key_arrive_in_enqueue_order() {
    const KEYS: usize = 50;
    const EACH: usize = 20;
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Topic, "accounts.*").await;
    let collector = Collector::start(&admin_conn.create_channel().await.unwrap(), &queue).await;

    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    let outbox = outbox_with(&db, relay, QueueOptions::new().concurrency(8)).await;
    let mut events = Vec::new();
    for seq in 0..EACH {
        for key in 0..KEYS {
            events.push(
                Event::json(
                    "accounts.updated",
                    &serde_json::json!({ "key": key, "seq": seq }),
                )
                .unwrap()
                .key(format!("account-{key}"))
                .header("seq", seq.to_string()),
            );
        }
    }
    db.enqueue(&events).await;

    outbox
        .run_until(async {
            let all = eventually(Duration::from_secs(120), || async {
                collector.len() >= KEYS * EACH
            })
            .await;
            assert!(all, "{} of {} arrived", collector.len(), KEYS * EACH);
        })
        .await
        .unwrap();

    let mut per_key: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for got in collector.seen() {
        let v: serde_json::Value = serde_json::from_slice(&got.payload).unwrap();
        per_key
            .entry(v["key"].as_u64().unwrap())
            .or_default()
            .push(v["seq"].as_u64().unwrap());
    }
    assert_eq!(per_key.len(), KEYS);
    let in_order: Vec<u64> = (0..EACH as u64).collect();
    for (key, seqs) in &per_key {
        assert_eq!(seqs, &in_order, "account-{key}'s events in enqueue order");
    }
    // What the interleaving of keys looked like.
    let first_keys: Vec<u64> = collector
        .seen()
        .iter()
        .take(KEYS)
        .map(|g| {
            serde_json::from_slice::<serde_json::Value>(&g.payload).unwrap()["key"]
                .as_u64()
                .unwrap()
        })
        .collect();
    println!("first keys to arrive: {first_keys:?}");
    remove(&channel, &exchange, &queue).await;
}

// ---------------------------------------------------------------------------------------
// A private RabbitMQ node.

#[path = "support/rabbit_node.rs"]
mod rabbit_node;
use outbox_publish::rabbitmq::lapin;
use rabbit_node::PrivateNode;

/// The private node is stopped while events are being published and started again:
/// every event reaches the durable queue (a re-publication only with the same id), none is
/// dead-lettered, and the type's breaker opened during the outage and closed after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_mid_run_loses_nothing() {
    const N: usize = 1_000;
    const AFTER_RESTART: usize = 100;
    let mut node = PrivateNode::new();
    let boot = node.start().await;
    println!("private node {} up in {boot:?}", node.name);
    let uri = node.uri();
    let (exchange, queue) = {
        let conn = broker_at(&uri, "the private RabbitMQ node").await;
        let channel = conn.create_channel().await.unwrap();
        let names = topology(&channel, ExchangeKind::Direct, "events").await;
        let _ = conn.close(200, "OK".into()).await;
        names
    };

    let db = Db::new().await;
    let relay = RabbitRelay::connect(&uri, &exchange)
        .await
        .unwrap()
        .confirm_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(3));
    // Slowed to about 8 / 15 ms so the stop lands mid-run.
    let handler = move |event: Event, ctx: MessageContext<()>| {
        let relay = relay.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(15)).await;
            <RabbitRelay as Handler<Event, ()>>::call(&relay, event, ctx).await
        }
    };
    let outbox = outbox_with(
        &db,
        handler,
        QueueOptions::new()
            .concurrency(8)
            .retry(RetrySchedule::fixed([Duration::from_millis(200)]))
            .breaker(
                Breaker::new().probe_backoff(Duration::from_millis(500), Duration::from_secs(2)),
            ),
    )
    .await;
    let admin = outbox.admin();
    let events: Vec<Event> = (0..N)
        .map(|i| Event::json("events", &serde_json::json!({ "n": i })).unwrap())
        .collect();
    let mut ids: Vec<String> = db
        .enqueue(&events)
        .await
        .iter()
        .map(ToString::to_string)
        .collect();

    let mut timings = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    outbox
        .run_until(async {
            // Stop once a fifth is out.
            let some = eventually(Duration::from_secs(60), || async {
                live_count(&admin).await <= (N - N / 5) as u64
            })
            .await;
            assert!(some, "publishing started");
            let left_at_stop = live_count(&admin).await;
            println!("stopping the private node with {left_at_stop} of {N} events left");
            let stop_took = node.stop();
            let down_at = Instant::now();
            assert!(left_at_stop > 0, "the stop came mid-run");
            let opened = eventually(Duration::from_secs(30), || async {
                admin
                    .breakers()
                    .await
                    .unwrap()
                    .iter()
                    .any(|b| b.name == EVENT_TYPE && b.is_open())
            })
            .await;
            assert!(opened, "the breaker opened: {:?}", admin.breakers().await);
            // More events while the broker is down: they wait behind the breaker.
            let later: Vec<Event> = (N..N + AFTER_RESTART)
                .map(|i| Event::json("events", &serde_json::json!({ "n": i })).unwrap())
                .collect();
            let later_ids = db.enqueue(&later).await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            let reboot = node.start().await;
            let outage = down_at.elapsed();
            let drained = eventually(Duration::from_secs(120), || async {
                live_count(&admin).await == 0
            })
            .await;
            assert!(
                drained,
                "{} events still queued after the restart; breakers {:?}",
                live_count(&admin).await,
                admin.breakers().await
            );
            ids.extend(later_ids.iter().map(ToString::to_string));
            timings = (stop_took, reboot, outage);
        })
        .await
        .unwrap();
    let (stop_took, reboot, outage) = timings;

    assert_eq!(dead_count(&admin).await, 0, "nothing dead-lettered");
    let breaker = admin
        .breakers()
        .await
        .unwrap()
        .into_iter()
        .find(|b| b.name == EVENT_TYPE)
        .expect("the type's breaker opened");
    assert!(
        breaker.times_opened >= 1 && !breaker.is_open(),
        "{breaker:?}"
    );

    // Everything is in the durable queue, persisted across the restart.
    let conn = broker_at(&uri, "the private RabbitMQ node").await;
    let collector = Collector::start(&conn.create_channel().await.unwrap(), &queue).await;
    let total = ids.len();
    let all = eventually(Duration::from_secs(60), || async {
        collector
            .seen()
            .iter()
            .map(|g| g.id.clone())
            .collect::<HashSet<_>>()
            .len()
            >= total
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = collector.seen();
    let distinct: HashSet<&str> = seen.iter().map(|g| g.id.as_str()).collect();
    assert!(all, "{} distinct of {total}", distinct.len());
    let expected: HashSet<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(distinct, expected, "every event, by its outbox id");
    // A duplicate is a re-publication of an unconfirmed event: same id, same payload.
    let mut payloads: HashMap<&str, &[u8]> = HashMap::new();
    for got in &seen {
        let first = payloads.entry(&got.id).or_insert(&got.payload);
        assert_eq!(
            *first,
            got.payload.as_slice(),
            "duplicates of {} agree",
            got.id
        );
    }
    println!(
        "private node: first boot {boot:?}, stop {stop_took:?}, reboot {reboot:?}, outage \
         {outage:?}; {} messages for {total} events ({} duplicates); breaker {breaker:?}",
        seen.len(),
        seen.len() - total
    );
    let channel = conn.create_channel().await.unwrap();
    remove(&channel, &exchange, &queue).await;
}

// ---------------------------------------------------------------------------------------
// The consuming side: `rabbitmq::consume` / `RabbitConsumer` through the inbox, on the
// machine's RabbitMQ, into a SQLite file that holds the outbox, the inbox and the
// handler's table.
//
// * events relayed by `RabbitRelay` are each handled once, by their outbox id, and acked;
// * a handler that fails once: rolled back, redelivered after the nack delay, handled once;
// * one message_id published twice: handled once, both acked; without message_id, by
//   content; `MissingId::Reject` sends it to the dead-letter exchange;
// * the consumer's channel closed by the broker or its queue deleted: an error that says so.

use lapin::{
    options::{BasicPublishOptions, ConfirmSelectOptions},
    BasicProperties,
};
use outbox_core::sqlx;
use outbox_publish::{
    rabbitmq::{ConsumeError, Consumed, MissingId, RabbitConsumer},
    Inbox, Received,
};

/// One attempt of the test handler: the event's `n`, whether RabbitMQ said it was
/// redelivered, when, its subject and headers.
#[derive(Debug, Clone)]
struct Attempt {
    n: i64,
    redelivered: bool,
    at: Instant,
    subject: String,
    headers: BTreeMap<String, String>,
}

type Attempts = Arc<Mutex<Vec<Attempt>>>;

/// The outbox's database with the consumer's table: `handled (id, n)`, one row per event
/// the handler committed.
async fn consumer_db(db: &Db) {
    sqlx::query("CREATE TABLE handled (id TEXT NOT NULL, n INTEGER NOT NULL)")
        .execute(&db.pool)
        .await
        .unwrap();
}

async fn handled_rows(db: &Db) -> Vec<(String, i64)> {
    sqlx::query_as("SELECT id, n FROM handled ORDER BY n")
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

async fn handled_count(db: &Db) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM handled")
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// A channel with `prefetch` and a consumer of `queue` on it.
async fn consumer_on(conn: &Connection, queue: &str, prefetch: u16) -> (Channel, lapin::Consumer) {
    let channel = conn.create_channel().await.unwrap();
    channel
        .basic_qos(prefetch, BasicQosOptions::default())
        .await
        .unwrap();
    let consumer = channel
        .basic_consume(
            queue.into(),
            unique("inbox-consumer").as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    (channel, consumer)
}

/// Runs `consumer` over `deliveries` with the test handler until `stop` is sent: the
/// handler records each attempt, inserts `(id, n)` from the JSON payload, and fails (after
/// its insert) the first attempt at each `n` in `fail_once`.
fn spawn_consumer(
    consumer: RabbitConsumer<sqlx::Sqlite>,
    deliveries: lapin::Consumer,
    attempts: Attempts,
    fail_once: &[i64],
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<Consumed, ConsumeError>>,
) {
    let failed: Arc<Mutex<HashSet<i64>>> = Arc::default();
    let fail_once: Arc<HashSet<i64>> = Arc::new(fail_once.iter().copied().collect());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        consumer
            .run_until(
                deliveries,
                move |tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>, event: &Received| {
                    let attempts = Arc::clone(&attempts);
                    let failed = Arc::clone(&failed);
                    let fail_once = Arc::clone(&fail_once);
                    Box::pin(async move {
                        let v: serde_json::Value = event.json().map_err(|e| e.to_string())?;
                        let n = v["n"].as_i64().ok_or("no n in the payload")?;
                        attempts.lock().unwrap().push(Attempt {
                            n,
                            redelivered: event.redelivered,
                            at: Instant::now(),
                            subject: event.subject.clone(),
                            headers: event.headers.clone(),
                        });
                        sqlx::query("INSERT INTO handled (id, n) VALUES (?, ?)")
                            .bind(&event.id)
                            .bind(n)
                            .execute(&mut **tx)
                            .await
                            .map_err(|e| e.to_string())?;
                        if fail_once.contains(&n) && failed.lock().unwrap().insert(n) {
                            return Err(format!("the first attempt at {n} fails"));
                        }
                        Ok::<_, String>(())
                    })
                },
                async move {
                    let _ = stopped.await;
                },
            )
            .await
    });
    (stop, task)
}

/// Ready messages in `queue` (after the consumer's channel closed: also what was not
/// acknowledged).
async fn ready_in(channel: &Channel, queue: &str) -> u32 {
    channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap()
        .message_count()
}

async fn inbox_ids(db: &Db, consumer: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM outbox_inbox WHERE consumer = ?")
        .bind(consumer)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// 300 events relayed from the outbox and consumed by 4 lanes: each handled once, under
/// its outbox id, its id in the inbox, every delivery acked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_events_are_consumed_once_each() {
    const N: i64 = 300;
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Topic, "shop.#").await;
    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    let outbox = outbox_with(&db, relay, QueueOptions::new().concurrency(8)).await;
    consumer_db(&db).await;
    let events: Vec<Event> = (0..N)
        .map(|n| {
            Event::json(
                format!("shop.orders.{}", n % 5),
                &serde_json::json!({ "n": n }),
            )
            .unwrap()
            .header("tenant", "acme")
        })
        .collect();
    let ids: HashSet<String> = db
        .enqueue(&events)
        .await
        .iter()
        .map(ToString::to_string)
        .collect();

    let consumer_conn = broker().await;
    let (consumer_channel, deliveries) = consumer_on(&consumer_conn, &queue, 40).await;
    let attempts = Attempts::default();
    let consumer = RabbitConsumer::new(Inbox::new(db.pool.clone(), "billing")).concurrency(4);
    let (stop, task) = spawn_consumer(consumer, deliveries, Arc::clone(&attempts), &[]);
    let started = Instant::now();
    outbox
        .run_until(async {
            let all = eventually(Duration::from_secs(120), || async {
                handled_count(&db).await >= N
            })
            .await;
            assert!(all, "{} of {N} handled", handled_count(&db).await);
        })
        .await
        .unwrap();
    let took = started.elapsed();
    // Anything handled twice would show by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.send(()).unwrap();
    let consumed = task.await.unwrap().expect("stopped, not ended");

    let rows = handled_rows(&db).await;
    assert_eq!(rows.len(), N as usize, "each event handled exactly once");
    let handled_ids: HashSet<String> = rows.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(handled_ids, ids, "under its outbox id");
    let ns: Vec<i64> = rows.iter().map(|(_, n)| *n).collect();
    assert_eq!(ns, (0..N).collect::<Vec<_>>());
    assert_eq!(inbox_ids(&db, "billing").await, N);
    assert_eq!(consumed.processed, N as u64, "{consumed:?}");
    assert_eq!(
        (
            consumed.handler_failed,
            consumed.database_failed,
            consumed.ack_failed
        ),
        (0, 0, 0),
        "{consumed:?}"
    );
    assert_eq!(consumed.without_id, 0);
    let attempts = attempts.lock().unwrap().clone();
    assert_eq!(attempts.len(), N as usize);
    for a in &attempts {
        assert_eq!(
            a.subject,
            format!("shop.orders.{}", a.n % 5),
            "the routing key"
        );
        assert_eq!(a.headers.get("tenant").map(String::as_str), Some("acme"));
        assert_eq!(
            a.headers.get("Content-Type").map(String::as_str),
            Some("application/json")
        );
        assert!(!a.redelivered);
    }
    // Everything was acknowledged: nothing comes back when the channel closes.
    consumer_channel.close(200, "OK".into()).await.unwrap();
    assert_eq!(ready_in(&channel, &queue).await, 0, "every delivery acked");
    println!("{N} events relayed and consumed in {took:?}: {consumed:?}");
    remove(&channel, &exchange, &queue).await;
}

/// The handler fails the first time for one event: its insert is rolled back, the delivery
/// is nack'd after the default 1 s and comes again marked redelivered, and the event is
/// handled once in the end; the others are not held up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_handler_is_redelivered_and_handled_once() {
    const N: i64 = 20;
    const FAILS: i64 = 7;
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Direct, "ledger").await;
    let db = Db::new().await;
    let relay = RabbitRelay::connect(AMQP, &exchange).await.unwrap();
    let outbox = outbox_with(&db, relay, QueueOptions::new()).await;
    consumer_db(&db).await;
    let events: Vec<Event> = (0..N)
        .map(|n| Event::json("ledger", &serde_json::json!({ "n": n })).unwrap())
        .collect();
    db.enqueue(&events).await;

    let consumer_conn = broker().await;
    let (consumer_channel, deliveries) = consumer_on(&consumer_conn, &queue, 10).await;
    let attempts = Attempts::default();
    let consumer = RabbitConsumer::new(Inbox::new(db.pool.clone(), "ledger"));
    let (stop, task) = spawn_consumer(consumer, deliveries, Arc::clone(&attempts), &[FAILS]);
    outbox
        .run_until(async {
            let all = eventually(Duration::from_secs(60), || async {
                handled_count(&db).await >= N
            })
            .await;
            assert!(all, "{} of {N} handled", handled_count(&db).await);
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.send(()).unwrap();
    let consumed = task.await.unwrap().expect("stopped, not ended");

    let rows = handled_rows(&db).await;
    assert_eq!(
        rows.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        (0..N).collect::<Vec<_>>(),
        "each once: the failed attempt's insert was rolled back"
    );
    assert_eq!(consumed.processed, N as u64, "{consumed:?}");
    assert_eq!(consumed.handler_failed, 1, "{consumed:?}");
    assert_eq!(consumed.skipped, 0, "{consumed:?}");
    let attempts = attempts.lock().unwrap().clone();
    let at_failing: Vec<Attempt> = attempts.iter().filter(|a| a.n == FAILS).cloned().collect();
    assert_eq!(at_failing.len(), 2, "{at_failing:?}");
    assert!(
        !at_failing[0].redelivered && at_failing[1].redelivered,
        "{at_failing:?}"
    );
    let gap = at_failing[1].at - at_failing[0].at;
    assert!(
        gap >= Duration::from_millis(950),
        "redelivered after the 1 s nack delay, not at once: {gap:?}"
    );
    // The events after the failed one went on meanwhile.
    let after = attempts
        .iter()
        .position(|a| a.n == FAILS && a.redelivered)
        .unwrap();
    assert!(
        attempts[..after].iter().any(|a| a.n > FAILS),
        "later events were handled while the failed one waited: {attempts:?}"
    );
    consumer_channel.close(200, "OK".into()).await.unwrap();
    assert_eq!(ready_in(&channel, &queue).await, 0, "every delivery acked");
    println!("redelivered after {gap:?}: {consumed:?}");
    remove(&channel, &exchange, &queue).await;
}

/// Publishes `payload` to `exchange` with `routing_key` and the `message_id` if any, and
/// waits for the confirm.
async fn publish_raw(
    channel: &Channel,
    exchange: &str,
    routing_key: &str,
    message_id: Option<&str>,
    payload: &[u8],
) {
    let mut properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into());
    if let Some(id) = message_id {
        properties = properties.with_message_id(id.into());
    }
    let confirm = channel
        .basic_publish(
            exchange.into(),
            routing_key.into(),
            BasicPublishOptions {
                mandatory: true,
                ..Default::default()
            },
            payload,
            properties,
        )
        .await
        .unwrap()
        .await
        .unwrap();
    assert!(confirm.is_ack(), "{confirm:?}");
}

/// The same message published twice with one message_id: handled once, both deliveries
/// acked. Without message_id the content decides: the same message twice is handled once,
/// a different one is handled too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_published_twice_with_one_id_is_handled_once() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Direct, "inbox").await;
    let db = Db::new().await;
    Outbox::new(db.backend()).migrate().await.unwrap();
    consumer_db(&db).await;

    let publisher = admin_conn.create_channel().await.unwrap();
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    let twice = br#"{"n":1}"#;
    publish_raw(&publisher, &exchange, "inbox", Some("01SAMEID"), twice).await;
    publish_raw(&publisher, &exchange, "inbox", Some("01SAMEID"), twice).await;
    publish_raw(&publisher, &exchange, "inbox", None, br#"{"n":2}"#).await;
    publish_raw(&publisher, &exchange, "inbox", None, br#"{"n":2}"#).await;
    publish_raw(&publisher, &exchange, "inbox", None, br#"{"n":3}"#).await;
    assert_eq!(ready_in(&channel, &queue).await, 5);

    let consumer_conn = broker().await;
    let (consumer_channel, deliveries) = consumer_on(&consumer_conn, &queue, 10).await;
    let attempts = Attempts::default();
    let consumer = RabbitConsumer::new(Inbox::new(db.pool.clone(), "dedup"));
    let (stop, task) = spawn_consumer(consumer, deliveries, Arc::clone(&attempts), &[]);
    // One lane, queue order: once n = 3 is handled, the duplicates before it were seen.
    let done = eventually(Duration::from_secs(30), || async {
        handled_rows(&db).await.iter().any(|(_, n)| *n == 3)
    })
    .await;
    assert!(done, "{:?}", handled_rows(&db).await);
    stop.send(()).unwrap();
    let consumed = task.await.unwrap().expect("stopped, not ended");

    let rows = handled_rows(&db).await;
    assert_eq!(
        rows.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        vec![1, 2, 3],
        "{rows:?}"
    );
    assert_eq!(rows[0].0, "01SAMEID");
    assert!(
        rows[1].0.starts_with("amqp-sha256:") && rows[2].0.starts_with("amqp-sha256:"),
        "{rows:?}"
    );
    assert_ne!(rows[1].0, rows[2].0);
    assert_eq!(consumed.processed, 3, "{consumed:?}");
    assert_eq!(consumed.skipped, 2, "{consumed:?}");
    assert_eq!(consumed.without_id, 3, "{consumed:?}");
    assert_eq!(consumed.ack_failed, 0, "{consumed:?}");
    assert_eq!(
        attempts.lock().unwrap().len(),
        3,
        "the handler ran once per message"
    );
    consumer_channel.close(200, "OK".into()).await.unwrap();
    assert_eq!(ready_in(&channel, &queue).await, 0, "both copies acked");
    remove(&channel, &exchange, &queue).await;
}

/// `MissingId::Reject`: a delivery without message_id is not handled and goes to the
/// queue's dead-letter exchange; one with an id is handled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_without_id_can_be_dead_lettered_instead() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (dlx, dlq) = topology(&channel, ExchangeKind::Fanout, "").await;
    let exchange = unique("x");
    let queue = unique("q");
    channel
        .exchange_declare(
            exchange.as_str().into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    let mut arguments = FieldTable::default();
    arguments.insert(
        "x-dead-letter-exchange".into(),
        AMQPValue::LongString(dlx.as_str().into()),
    );
    channel
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions::durable(),
            arguments,
        )
        .await
        .unwrap();
    channel
        .queue_bind(
            queue.as_str().into(),
            exchange.as_str().into(),
            "strict".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    let db = Db::new().await;
    Outbox::new(db.backend()).migrate().await.unwrap();
    consumer_db(&db).await;
    let publisher = admin_conn.create_channel().await.unwrap();
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .unwrap();
    publish_raw(&publisher, &exchange, "strict", None, br#"{"n":1}"#).await;
    publish_raw(
        &publisher,
        &exchange,
        "strict",
        Some("01WITHID"),
        br#"{"n":2}"#,
    )
    .await;

    let consumer_conn = broker().await;
    let (consumer_channel, deliveries) = consumer_on(&consumer_conn, &queue, 10).await;
    let consumer =
        RabbitConsumer::new(Inbox::new(db.pool.clone(), "strict")).missing_id(MissingId::Reject);
    let (stop, task) = spawn_consumer(consumer, deliveries, Attempts::default(), &[]);
    let done = eventually(Duration::from_secs(30), || async {
        handled_count(&db).await >= 1 && ready_in(&channel, &dlq).await >= 1
    })
    .await;
    assert!(done, "handled {}", handled_count(&db).await);
    stop.send(()).unwrap();
    let consumed = task.await.unwrap().expect("stopped, not ended");
    let rows = handled_rows(&db).await;
    assert_eq!(rows, vec![("01WITHID".to_owned(), 2)]);
    assert_eq!(
        (consumed.processed, consumed.without_id, consumed.rejected),
        (1, 1, 1),
        "{consumed:?}"
    );
    assert_eq!(ready_in(&channel, &dlq).await, 1, "dead-lettered, not lost");
    consumer_channel.close(200, "OK".into()).await.unwrap();
    assert_eq!(ready_in(&channel, &queue).await, 0);
    remove(&channel, &exchange, &queue).await;
    remove(&channel, &dlx, &dlq).await;
}

/// The consumer ending on its own is an error that says why: the broker closing its
/// channel (404 on that channel) ends it with lapin's error; its queue deleted cancels it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_ending_is_an_error_with_the_reason() {
    let admin_conn = broker().await;
    let channel = admin_conn.create_channel().await.unwrap();
    let (exchange, queue) = topology(&channel, ExchangeKind::Direct, "end").await;
    let db = Db::new().await;
    Outbox::new(db.backend()).migrate().await.unwrap();
    consumer_db(&db).await;
    let consumer_conn = broker().await;

    // The broker closes the consumer's channel.
    let (consumer_channel, deliveries) = consumer_on(&consumer_conn, &queue, 10).await;
    let consumer = RabbitConsumer::new(Inbox::new(db.pool.clone(), "end"));
    let (_stop, task) = spawn_consumer(consumer.clone(), deliveries, Attempts::default(), &[]);
    let missing = unique("missing");
    let refused = consumer_channel
        .queue_declare(
            missing.as_str().into(),
            QueueDeclareOptions {
                passive: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await;
    assert!(refused.is_err());
    let ended = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("consume returns when its channel closes")
        .unwrap()
        .unwrap_err();
    let text = ended.to_string();
    assert!(
        matches!(&ended, ConsumeError::Closed { queue: q, .. } if *q == queue),
        "{ended:?}"
    );
    assert!(
        text.contains(&queue) && text.contains("NOT_FOUND"),
        "{text}"
    );

    // The queue is deleted under it.
    let (_consumer_channel, deliveries) = consumer_on(&consumer_conn, &queue, 10).await;
    let (_stop, task) = spawn_consumer(consumer, deliveries, Attempts::default(), &[]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    remove(&channel, &exchange, &queue).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("consume returns when its queue is deleted")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&ended, ConsumeError::Cancelled { queue: q, .. } if *q == queue),
        "{ended:?}"
    );
    assert!(ended.to_string().contains("cancelled"), "{ended}");
    assert_eq!(ended.consumed(), Consumed::default());
}
