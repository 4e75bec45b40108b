//! The consuming side: JetStream messages through the inbox ([`NatsConsumer`],
//! [`consume`]).

use std::{
    collections::BTreeMap,
    hash::{Hash, Hasher},
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use async_nats::{
    header::NATS_MESSAGE_ID,
    jetstream::{message::AckKind, Message as JetStreamMessage},
};
use futures::{future::BoxFuture, SinkExt as _, Stream, StreamExt as _};
use outbox_core::{
    inbox::{MAX_CONSUMER_LEN, MAX_PROCESSED_ID_LEN},
    sqlx, InsertMessages,
};

use super::{shown, BROKER};
use crate::inbox::{Handled, Inbox, InboxError, Received};

/// The first redelivery delay a failed message is nak'd with ([`NatsConsumer::nak_delay`]).
pub const DEFAULT_NAK_DELAY: Duration = Duration::from_secs(1);

/// The longest redelivery delay by default ([`NatsConsumer::nak_delay`]).
pub const DEFAULT_MAX_NAK_DELAY: Duration = Duration::from_secs(60);

/// Messages waiting for each lane of a [`NatsConsumer`] with a concurrency above 1.
const LANE_BUFFER: usize = 8;

/// Consumes JetStream messages through `inbox`, running `handler` once per event: the
/// defaults of [`NatsConsumer`] (one message at a time, in the order the stream delivers
/// them). Returns when `messages` ends; see [`NatsConsumer::run`] for what happens to each
/// message.
///
/// ```no_run
/// use async_nats::jetstream::{self, consumer::pull};
/// use futures::StreamExt;
/// use outbox_core::sqlx::{self, Sqlite, SqlitePool, Transaction};
/// use outbox_publish::{nats::consume, Inbox, Received};
///
/// # async fn demo(pool: SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
/// let js = jetstream::new(async_nats::connect("nats://127.0.0.1:4222").await?);
/// // A durable pull consumer with explicit acks (the default ack policy).
/// let consumer = js
///     .get_stream("ORDERS")
///     .await?
///     .get_or_create_consumer(
///         "billing",
///         pull::Config { durable_name: Some("billing".into()), ..Default::default() },
///     )
///     .await?;
/// // Until SIGINT/SIGTERM: the stream ends there, and `consume` returns.
/// let messages = consumer.messages().await?.take_until(outbox_core::shutdown_signal());
/// let consumed = consume(
///     messages,
///     Inbox::new(pool, "billing"),
///     |tx: &mut Transaction<'static, Sqlite>, event: &Received| {
///         Box::pin(async move {
///             // In the inbox's transaction: committed with the event's id, or not at all.
///             sqlx::query("INSERT INTO invoices (event_id, body) VALUES (?, ?)")
///                 .bind(&event.id)
///                 .bind(&event.payload)
///                 .execute(&mut **tx)
///                 .await?;
///             Ok::<_, sqlx::Error>(())
///         })
///     },
/// )
/// .await?;
/// println!("{} processed, {} redeliveries skipped", consumed.processed, consumed.skipped);
/// # Ok(()) }
/// ```
pub async fn consume<DB, S, SE, E, F>(
    messages: S,
    inbox: Inbox<DB>,
    handler: F,
) -> Result<Consumed, ConsumeError>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
    S: Stream<Item = Result<JetStreamMessage, SE>>,
    SE: std::error::Error + Send + Sync + 'static,
    E: std::fmt::Display,
    F: for<'t> Fn(
        &'t mut sqlx::Transaction<'static, DB>,
        &'t Received,
    ) -> BoxFuture<'t, Result<(), E>>,
{
    NatsConsumer::new(inbox).run(messages, handler).await
}

/// The consuming side of the outbox for NATS JetStream: runs the application's handler for
/// each message of a pull consumer inside the application's database transaction, with the
/// message's id recorded by the [`Inbox`] in that transaction, and acknowledges the message
/// once that transaction has committed — so a redelivered message (a lost ack, a relay's
/// re-publish after a lost `PubAck`) is skipped, and the handler's effects happen once.
///
/// Build it with the inbox, set the concurrency and redelivery delays, then
/// [`run`](Self::run) it over a message stream (`consumer.messages().await?`, a
/// `fetch`/`batch`, or any stream of [`jetstream::Message`](JetStreamMessage) results).
/// [`consume`] is `NatsConsumer::new(inbox).run(messages, handler)`.
///
/// The pull consumer must acknowledge explicitly (`AckPolicy::Explicit`, the default):
/// `NatsConsumer` waits for the server to confirm each ack. Stopping: `run` returns when
/// the stream ends (wrap it in `take_until(signal)`), or drop its future (a message being
/// handled then is rolled back and redelivered after the consumer's ack wait).
///
/// Ids are recorded per inbox consumer name for the outbox's inbox retention (7 days by
/// default, `Outbox::inbox_keep_for`): keep them longer than JetStream can redeliver
/// (the consumer's ack wait × `max_deliver`) and longer than a re-publish can come.
///
/// Metrics: `outbox_consume_total{broker="nats", outcome}` (`processed`, `skipped`,
/// `handler_failed`, `database_failed`, `ack_failed`, `without_id`, `stream_error`).
///
/// ```no_run
/// # use outbox_core::sqlx::{self, Sqlite, SqlitePool, Transaction};
/// # use outbox_publish::{nats::NatsConsumer, Inbox, Received};
/// # async fn demo(
/// #     pool: SqlitePool,
/// #     messages: async_nats::jetstream::consumer::pull::Stream,
/// # ) -> Result<(), Box<dyn std::error::Error>> {
/// // 16 transactions at once; one subject's messages in order; failures back after 2 s,
/// // 4 s, … up to 5 min.
/// NatsConsumer::new(Inbox::new(pool, "billing"))
///     .concurrency(16)
///     .nak_delay(std::time::Duration::from_secs(2), std::time::Duration::from_secs(300))
///     .run(messages, |tx: &mut Transaction<'static, Sqlite>, event: &Received| {
///         Box::pin(async move {
///             sqlx::query("INSERT INTO ledger (event_id) VALUES (?)")
///                 .bind(&event.id)
///                 .execute(&mut **tx)
///                 .await
///                 .map(|_| ())
///         })
///     })
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct NatsConsumer<DB: sqlx::Database> {
    inbox: Inbox<DB>,
    concurrency: usize,
    nak_delay: Duration,
    max_nak_delay: Duration,
}

impl<DB> std::fmt::Debug for NatsConsumer<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsConsumer")
            .field("consumer", &self.inbox.consumer())
            .field("concurrency", &self.concurrency)
            .field("nak_delay", &self.nak_delay)
            .field("max_nak_delay", &self.max_nak_delay)
            .finish()
    }
}

/// What a [`NatsConsumer`] did with the messages of a stream that ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Consumed {
    /// First deliveries: the handler ran and its transaction committed with the id.
    pub processed: u64,
    /// Redeliveries (and re-publishes stored twice) the inbox recognised: the handler did
    /// not run; acknowledged.
    pub skipped: u64,
    /// Messages whose handler failed: rolled back and nak'd with a delay.
    pub handler_failed: u64,
    /// Messages the database failed for (begin, recording the id, commit): rolled back and
    /// nak'd with a delay.
    pub database_failed: u64,
    /// Handled messages whose ack the server did not confirm (the connection dropped, a
    /// timeout): JetStream redelivers them after the consumer's ack wait, and the inbox
    /// skips them then.
    pub ack_failed: u64,
    /// Messages without a usable `Nats-Msg-Id`, recorded under their stream sequence
    /// (`stream:<stream>:<sequence>`).
    pub without_id: u64,
    /// Errors the message stream yielded (a missed heartbeat, a failed pull request while
    /// reconnecting); the stream goes on after those.
    pub stream_errors: u64,
}

/// Why a [`NatsConsumer`] stopped before its message stream ended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumeError {
    /// The inbox's consumer name cannot be recorded (1 to 100 bytes, no control
    /// characters): no message was taken.
    #[error("{0}")]
    Config(String),
    /// The message stream yielded an error and then ended (the consumer was deleted, is
    /// push-based, a pull request exceeded its limits): recreate it and run again. What
    /// was consumed before is in `consumed`.
    #[error("the JetStream message stream ended after an error: {source}")]
    Messages {
        /// The stream's last error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
        /// What was consumed before.
        consumed: Consumed,
    },
}

/// [`Consumed`] counted from several lanes.
#[derive(Default)]
struct Counters {
    processed: AtomicU64,
    skipped: AtomicU64,
    handler_failed: AtomicU64,
    database_failed: AtomicU64,
    ack_failed: AtomicU64,
    without_id: AtomicU64,
    stream_errors: AtomicU64,
}

impl Counters {
    fn add(counter: &AtomicU64, outcome: &'static str) {
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("outbox_consume_total", "broker" => BROKER, "outcome" => outcome)
            .increment(1);
    }

    fn snapshot(&self) -> Consumed {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Consumed {
            processed: get(&self.processed),
            skipped: get(&self.skipped),
            handler_failed: get(&self.handler_failed),
            database_failed: get(&self.database_failed),
            ack_failed: get(&self.ack_failed),
            without_id: get(&self.without_id),
            stream_errors: get(&self.stream_errors),
        }
    }
}

impl<DB> NatsConsumer<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    /// A consumer recording ids in `inbox`, one message at a time, nak'ing failures with
    /// [`DEFAULT_NAK_DELAY`] doubling up to [`DEFAULT_MAX_NAK_DELAY`].
    pub fn new(inbox: Inbox<DB>) -> Self {
        Self {
            inbox,
            concurrency: 1,
            nak_delay: DEFAULT_NAK_DELAY,
            max_nak_delay: DEFAULT_MAX_NAK_DELAY,
        }
    }

    /// Handles up to `n` messages at once (default 1, at least 1), each in its own
    /// transaction. Messages are spread over `n` lanes by subject: messages with the same
    /// subject are handled one at a time in the order the stream delivered them, so a
    /// subject per aggregate (`orders.42`) keeps each aggregate's order. With 1 every
    /// message is handled in delivery order.
    ///
    /// Delivery order is stream order until a message is nak'd (or its ack is lost): its
    /// redelivery comes after later messages. For strict order under failures give the
    /// pull consumer `max_ack_pending: 1` (one message out at a time, slower).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// A failed message (its handler or the database failed) is nak'd to be redelivered
    /// after `first` on its first delivery, doubling with each further delivery up to
    /// `max` (defaults 1 s and 60 s). The pull consumer's `max_deliver` (unlimited by
    /// default) bounds how often JetStream redelivers it.
    pub fn nak_delay(mut self, first: Duration, max: Duration) -> Self {
        self.nak_delay = first;
        self.max_nak_delay = max.max(first);
        self
    }

    /// Consumes `messages` until the stream ends. For each message:
    ///
    /// 1. its [`Received`]: id = its `Nats-Msg-Id` header (the outbox message id the relay
    ///    published it with); subject, headers (the first value of each), payload, and
    ///    `redelivered` when JetStream delivered it before. A message without a
    ///    `Nats-Msg-Id` (published by something other than the relay), or with one the
    ///    inbox cannot record (over 255 bytes), gets `stream:<stream>:<stream sequence>`:
    ///    unique per stored message and the same on every redelivery of it, so
    ///    redeliveries are still skipped — but two publishes of one event stored twice are
    ///    two messages to it, and processed twice;
    /// 2. [`Inbox::handle`] runs `handler` in a transaction with the id recorded, or
    ///    skips it when the id was processed before;
    /// 3. processed or skipped: acknowledged, waiting for the server to confirm the ack
    ///    (a confirmed ack is not redelivered; an unconfirmed one is logged, the message
    ///    may come again and is then skipped);
    /// 4. the handler failed: logged at WARN with the error, rolled back, and nak'd with
    ///    the [`nak_delay`](Self::nak_delay); the database failed: the same.
    ///
    /// Errors the stream yields along the way (missed heartbeats while NATS is away) are
    /// logged and consumption goes on; a stream that ends right after an error returns
    /// [`ConsumeError::Messages`]. Nothing in a message's content makes this panic.
    pub async fn run<S, SE, E, F>(self, messages: S, handler: F) -> Result<Consumed, ConsumeError>
    where
        S: Stream<Item = Result<JetStreamMessage, SE>>,
        SE: std::error::Error + Send + Sync + 'static,
        E: std::fmt::Display,
        F: for<'t> Fn(
            &'t mut sqlx::Transaction<'static, DB>,
            &'t Received,
        ) -> BoxFuture<'t, Result<(), E>>,
    {
        let name = self.inbox.consumer();
        if name.is_empty() || name.len() > MAX_CONSUMER_LEN || name.chars().any(char::is_control) {
            return Err(ConsumeError::Config(format!(
                "inbox consumer name `{}`: use 1 to {MAX_CONSUMER_LEN} bytes without control \
                 characters",
                shown(name)
            )));
        }
        let counters = Counters::default();
        let this = &self;
        let handler = &handler;
        let counters_ref = &counters;
        let last_error = if self.concurrency == 1 {
            let mut messages = std::pin::pin!(messages);
            let mut last_error = None;
            while let Some(item) = messages.next().await {
                match item {
                    Ok(message) => {
                        last_error = None;
                        this.handle_one(message, handler, counters_ref).await;
                    }
                    Err(e) => last_error = Some(stream_error(e, counters_ref)),
                }
            }
            last_error
        } else {
            let (senders, receivers): (Vec<_>, Vec<_>) = (0..self.concurrency)
                .map(|_| futures::channel::mpsc::channel::<JetStreamMessage>(LANE_BUFFER))
                .unzip();
            let lanes = futures::future::join_all(receivers.into_iter().map(|lane| async move {
                let mut lane = lane;
                while let Some(message) = lane.next().await {
                    this.handle_one(message, handler, counters_ref).await;
                }
            }));
            let dispatch = async move {
                let mut senders = senders;
                let mut messages = std::pin::pin!(messages);
                let mut last_error = None;
                while let Some(item) = messages.next().await {
                    match item {
                        Ok(message) => {
                            last_error = None;
                            let lane = lane_of(message.subject.as_str(), senders.len());
                            // A lane ends only when its sender is dropped: sending fails never.
                            let _ = senders[lane].send(message).await;
                        }
                        Err(e) => last_error = Some(stream_error(e, counters_ref)),
                    }
                }
                drop(senders);
                last_error
            };
            futures::future::join(dispatch, lanes).await.0
        };
        let consumed = counters.snapshot();
        match last_error {
            Some(source) => Err(ConsumeError::Messages { source, consumed }),
            None => Ok(consumed),
        }
    }

    /// Handles one message to its ack or nak.
    async fn handle_one<E, F>(&self, message: JetStreamMessage, handler: &F, counters: &Counters)
    where
        E: std::fmt::Display,
        F: for<'t> Fn(
            &'t mut sqlx::Transaction<'static, DB>,
            &'t Received,
        ) -> BoxFuture<'t, Result<(), E>>,
    {
        let (position, delivered) = match message.info() {
            Ok(info) => (
                Some((info.stream.to_owned(), info.stream_sequence)),
                info.delivered,
            ),
            Err(_) => (None, 1),
        };
        let header_id = message
            .headers
            .as_ref()
            .and_then(|h| h.get(NATS_MESSAGE_ID))
            .map(|v| v.as_str().to_owned());
        let id = match (header_id, &position) {
            (Some(id), _) if recordable(&id) => id,
            (header_id, Some((stream, sequence))) => {
                Counters::add(&counters.without_id, "without_id");
                if let Some(bad) = header_id {
                    tracing::warn!(
                        subject = %shown(message.subject.as_str()),
                        nats_msg_id = %shown(&bad),
                        stream = %stream, sequence,
                        "a Nats-Msg-Id the inbox cannot record (empty, over \
                         {MAX_PROCESSED_ID_LEN} bytes or with control characters): the \
                         message is recorded under its stream sequence"
                    );
                }
                stream_id(stream, *sequence)
            }
            (_, None) => {
                // Not a JetStream message (no reply subject): nothing identifies it across
                // deliveries, and it cannot be acknowledged or redelivered.
                Counters::add(&counters.without_id, "without_id");
                tracing::error!(
                    subject = %shown(message.subject.as_str()),
                    "a message without Nats-Msg-Id and without JetStream metadata (not \
                     delivered by a JetStream consumer): not handled; consume a stream's \
                     pull consumer"
                );
                return;
            }
        };
        let mut headers = BTreeMap::new();
        if let Some(map) = &message.headers {
            for (name, values) in map.iter() {
                if let Some(value) = values.first() {
                    headers.insert(name.to_string(), value.as_str().to_owned());
                }
            }
        }
        let received = Received {
            id,
            subject: message.subject.as_str().to_owned(),
            headers,
            payload: message.payload.to_vec(),
            redelivered: delivered > 1,
        };
        match self.inbox.handle(&received, handler).await {
            Ok(handled) => {
                match handled {
                    Handled::Processed => Counters::add(&counters.processed, "processed"),
                    Handled::Skipped => Counters::add(&counters.skipped, "skipped"),
                }
                if message.reply.is_none() {
                    return;
                }
                if let Err(e) = message.double_ack().await {
                    Counters::add(&counters.ack_failed, "ack_failed");
                    tracing::warn!(
                        id = %shown(&received.id), subject = %shown(&received.subject),
                        error = %e,
                        "the server did not confirm the ack of a handled message: JetStream \
                         redelivers it after the consumer's ack wait, and the inbox skips it"
                    );
                }
            }
            Err(failure) => {
                let delay = self.delay(delivered);
                match &failure {
                    InboxError::Handler(e) => {
                        Counters::add(&counters.handler_failed, "handler_failed");
                        tracing::warn!(
                            id = %shown(&received.id), subject = %shown(&received.subject),
                            delivered, error = %e,
                            "the handler failed: rolled back, redelivered in {delay:?}"
                        );
                    }
                    InboxError::Database(e) => {
                        Counters::add(&counters.database_failed, "database_failed");
                        tracing::warn!(
                            id = %shown(&received.id), subject = %shown(&received.subject),
                            delivered, error = %e,
                            "the inbox's database failed: rolled back, redelivered in \
                             {delay:?}"
                        );
                    }
                    InboxError::NoId => {
                        // Every message gets an id above; counted as the database's.
                        Counters::add(&counters.database_failed, "database_failed");
                        tracing::warn!(
                            subject = %shown(&received.subject),
                            error = %failure, "redelivered in {delay:?}"
                        );
                    }
                }
                if message.reply.is_some() {
                    if let Err(e) = message.ack_with(AckKind::Nak(Some(delay))).await {
                        // Not redelivered sooner, but after the consumer's ack wait.
                        tracing::debug!(error = %e, "the nak was not sent");
                    }
                }
            }
        }
    }

    /// The nak delay for a message delivered `delivered` times.
    fn delay(&self, delivered: i64) -> Duration {
        let doublings = u32::try_from(delivered.saturating_sub(1).clamp(0, 20)).unwrap_or(0);
        self.nak_delay
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(self.max_nak_delay)
    }
}

/// Logs and counts an error of the message stream; returns it to be reported if the
/// stream ends next.
fn stream_error<SE: std::error::Error + Send + Sync + 'static>(
    error: SE,
    counters: &Counters,
) -> Box<dyn std::error::Error + Send + Sync> {
    Counters::add(&counters.stream_errors, "stream_error");
    tracing::warn!(
        error = %error,
        "the JetStream message stream reported an error; consuming goes on (the client \
         reconnects and pulls again)"
    );
    Box::new(error)
}

/// Whether the inbox can record `id` as it is.
fn recordable(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_PROCESSED_ID_LEN && !id.chars().any(char::is_control)
}

/// `stream:<stream>:<sequence>`, within the inbox's id limit (a stream name is at most 255
/// bytes; a longer one is cut at a character boundary).
fn stream_id(stream: &str, sequence: u64) -> String {
    let tail = format!(":{sequence}");
    let room = MAX_PROCESSED_ID_LEN - "stream:".len() - tail.len();
    let mut end = stream.len().min(room);
    while !stream.is_char_boundary(end) {
        end -= 1;
    }
    let name: String = stream[..end].chars().filter(|c| !c.is_control()).collect();
    format!("stream:{name}{tail}")
}

/// The lane (of `lanes`) of messages on `subject`.
fn lane_of(subject: &str, lanes: usize) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    subject.hash(&mut hasher);
    (hasher.finish() % lanes as u64) as usize
}
