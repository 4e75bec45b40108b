//! The consuming side: a RabbitMQ queue's deliveries through the inbox
//! ([`RabbitConsumer`], [`consume`]).

use std::{
    collections::BTreeMap,
    fmt,
    future::Future,
    hash::Hash as _,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use futures::{channel::mpsc, future::BoxFuture, SinkExt as _, StreamExt as _};
use lapin::{
    message::Delivery,
    options::{BasicAckOptions, BasicNackOptions},
    types::{AMQPValue, ShortString},
    Acker, BasicProperties, Consumer,
};
use outbox_core::{
    inbox::{MAX_CONSUMER_LEN, MAX_PROCESSED_ID_LEN},
    sqlx, InsertMessages,
};

use sha2::{Digest as _, Sha256};

use crate::inbox::{Handled, Inbox, InboxError, Received};

/// How long a failed delivery is held before it is nack'd back to its queue, the first time
/// ([`RabbitConsumer::nack_delay`]).
pub const DEFAULT_NACK_DELAY: Duration = Duration::from_secs(1);

/// The longest such delay by default ([`RabbitConsumer::nack_delay`]).
pub const DEFAULT_MAX_NACK_DELAY: Duration = Duration::from_secs(60);

/// The prefix of the ids given to deliveries without a `message_id`
/// ([`MissingId::ContentHash`]), followed by 64 hex digits.
pub const CONTENT_ID_PREFIX: &str = "amqp-sha256:";

/// The name of the metric counting consumed deliveries, by `broker` and `outcome`.
const CONSUME_METRIC: &str = "outbox_consume_total";

/// Consumes the deliveries of `consumer` through `inbox`, running `handler` once per event,
/// with the defaults of [`RabbitConsumer`]: one delivery at a time, a failed one nack'd
/// back to its queue after [`DEFAULT_NACK_DELAY`], a delivery without `message_id` handled
/// under an id made from its content ([`MissingId::ContentHash`]). See
/// [`RabbitConsumer::run_until`] for what happens to each delivery.
///
/// It runs until the consumer ends, which is always an error ([`ConsumeError`]: the
/// channel or connection closed, or the consumer was cancelled) carrying what was consumed
/// until then; to stop it on purpose use [`RabbitConsumer::run_until`], or drop the future
/// (then close the channel: the delivery being handled is rolled back, and RabbitMQ
/// requeues what was not acknowledged).
///
/// **Prefetch is the caller's setting**, on the channel before `basic_consume`
/// (`channel.basic_qos(n, ..)`): how many unacknowledged deliveries RabbitMQ sends ahead.
/// Recommended: about 10 per lane (`10 * concurrency`; 10 with the defaults) — enough to
/// keep the handler busy while acks travel, few enough that a stop or a crash hands back
/// little, and a failed delivery held for its nack delay takes one of them. Never leave it
/// unlimited (0, RabbitMQ's default): the whole queue would be pushed into this process.
/// The consumer must acknowledge explicitly (`BasicConsumeOptions::no_ack: false`, the
/// default).
///
/// ```no_run
/// use outbox_publish::rabbitmq::lapin::{
///     options::{BasicConsumeOptions, BasicQosOptions},
///     types::FieldTable,
///     Connection, ConnectionProperties,
/// };
/// use outbox_core::sqlx::{self, Sqlite, SqlitePool, Transaction};
/// use outbox_publish::{rabbitmq::consume, Inbox, Received};
///
/// # async fn demo(pool: SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
/// let uri = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// let connection = Connection::connect(uri, ConnectionProperties::default()).await?;
/// let channel = connection.create_channel().await?;
/// // The prefetch: at most 10 unacknowledged deliveries on this channel.
/// channel.basic_qos(10, BasicQosOptions::default()).await?;
/// let consumer = channel
///     .basic_consume(
///         "billing".into(),
///         "billing".into(),
///         BasicConsumeOptions::default(),
///         FieldTable::default(),
///     )
///     .await?;
/// let ended = consume(
///     consumer,
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
/// .await;
/// // The channel or connection closed, or the queue was deleted: start again.
/// eprintln!("consuming stopped: {ended:?}");
/// # Ok(()) }
/// ```
pub async fn consume<DB, E, F>(
    consumer: Consumer,
    inbox: Inbox<DB>,
    handler: F,
) -> Result<Consumed, ConsumeError>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
    E: fmt::Display,
    F: for<'t> Fn(
        &'t mut sqlx::Transaction<'static, DB>,
        &'t Received,
    ) -> BoxFuture<'t, Result<(), E>>,
{
    RabbitConsumer::new(inbox).run(consumer, handler).await
}

/// What a [`RabbitConsumer`] does with a delivery that has no usable `message_id` (none,
/// empty, or with control characters): published by something other than
/// [`RabbitRelay`](super::RabbitRelay), which always sets it.
///
/// AMQP gives a stored message nothing else that stays the same across its redeliveries
/// (a delivery tag is per channel and delivery), so there is no lossless choice; the
/// default handles the message, the other refuses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MissingId {
    /// Handled through the inbox under an id made from its content: [`CONTENT_ID_PREFIX`]
    /// and the SHA-256 of its routing key, body and the properties RabbitMQ never rewrites
    /// (content type and encoding, correlation id, type, app id, user id, reply-to,
    /// timestamp; not the headers, to which RabbitMQ adds `x-delivery-count` on
    /// redeliveries from quorum queues). A redelivery, or a publisher's retry of the same
    /// message, is skipped like any other; two *different* messages with the same routing
    /// key, byte-identical body and those properties are taken for one and the second is
    /// skipped (logged at WARN when RabbitMQ says it is a first delivery). For events,
    /// which name what happened and to what, identical content is the same event. Logged
    /// at WARN for each such delivery. The default.
    #[default]
    ContentHash,
    /// Refused: logged at ERROR with its queue, exchange and routing key, and nack'd
    /// without requeue, so RabbitMQ dead-letters it when the queue has a dead-letter
    /// exchange (`x-dead-letter-exchange`) and **drops it otherwise**. For queues that
    /// only the relay publishes to, with a dead-letter exchange to catch strays.
    Reject,
}

/// The consuming side of the outbox for RabbitMQ: runs the application's handler for each
/// delivery of a `lapin::Consumer` inside the application's database transaction, with the
/// message's id recorded by the [`Inbox`] in that transaction, and acknowledges the
/// delivery once that transaction has committed — a redelivered message is skipped, and
/// the handler's effects happen once.
///
/// Build it with the inbox, set the concurrency, nack delays and what to do without a
/// `message_id`, then [`run`](Self::run) or [`run_until`](Self::run_until) it over a
/// consumer. [`consume`] is `RabbitConsumer::new(inbox).run(consumer, handler)`. The
/// prefetch is the channel's setting (see [`consume`]). Several consumers (processes) may
/// read one queue with the same inbox name: the inbox lets one of them process each id.
pub struct RabbitConsumer<DB: sqlx::Database> {
    inbox: Inbox<DB>,
    concurrency: usize,
    nack_delay: Duration,
    max_nack_delay: Duration,
    missing_id: MissingId,
    totals: Arc<Counters>,
}

impl<DB: sqlx::Database> Clone for RabbitConsumer<DB> {
    fn clone(&self) -> Self {
        Self {
            inbox: self.inbox.clone(),
            concurrency: self.concurrency,
            nack_delay: self.nack_delay,
            max_nack_delay: self.max_nack_delay,
            missing_id: self.missing_id,
            totals: self.totals.clone(),
        }
    }
}

impl<DB> fmt::Debug for RabbitConsumer<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RabbitConsumer")
            .field("consumer", &self.inbox.consumer())
            .field("concurrency", &self.concurrency)
            .field("nack_delay", &self.nack_delay)
            .field("max_nack_delay", &self.max_nack_delay)
            .field("missing_id", &self.missing_id)
            .finish()
    }
}

/// What a [`RabbitConsumer`] did with the deliveries it took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Consumed {
    /// First deliveries: the handler ran and its transaction committed with the id.
    pub processed: u64,
    /// Redeliveries (and messages published twice) the inbox recognised: the handler did
    /// not run; acknowledged.
    pub skipped: u64,
    /// Deliveries whose handler failed: rolled back and nack'd with requeue after a delay.
    pub handler_failed: u64,
    /// Deliveries the database failed for (begin, recording the id, commit): rolled back
    /// and nack'd with requeue after a delay.
    pub database_failed: u64,
    /// Handled deliveries whose ack could not be sent (the channel closed): RabbitMQ
    /// requeues them, and the inbox skips them when they come again.
    pub ack_failed: u64,
    /// Deliveries without a usable `message_id` ([`MissingId`]).
    pub without_id: u64,
    /// Of those, the ones refused ([`MissingId::Reject`]).
    pub rejected: u64,
    /// Errors the consumer reported (a channel error lapin recovers from).
    pub stream_errors: u64,
}

/// Why a [`RabbitConsumer`] stopped before it was told to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumeError {
    /// The inbox's consumer name cannot be recorded (1 to 100 bytes, no control
    /// characters): no delivery was taken.
    #[error("{0}")]
    Config(String),
    /// The channel or the connection closed with an error (the connection was lost, the
    /// broker closed the channel): open a new channel and consumer, and run again.
    /// Deliveries not acknowledged are requeued by RabbitMQ.
    #[error("consuming from RabbitMQ queue `{queue}` ended: {source}")]
    Closed {
        /// The queue consumed from.
        queue: String,
        /// The error that ended the consumer.
        #[source]
        source: lapin::Error,
        /// What was consumed before.
        consumed: Consumed,
    },
    /// The consumer ended without an error: cancelled by RabbitMQ (its queue was deleted),
    /// by the application (`basic_cancel`), or its channel or connection was closed
    /// normally.
    #[error(
        "consuming from RabbitMQ queue `{queue}` ended: the consumer was cancelled (the \
         queue was deleted, or basic_cancel) or its channel closed"
    )]
    Cancelled {
        /// The queue consumed from.
        queue: String,
        /// What was consumed before.
        consumed: Consumed,
    },
}

impl ConsumeError {
    /// What was consumed before the consumer ended.
    pub fn consumed(&self) -> Consumed {
        match self {
            Self::Config(_) => Consumed::default(),
            Self::Closed { consumed, .. } | Self::Cancelled { consumed, .. } => *consumed,
        }
    }
}

/// [`Consumed`] counted from several lanes: one run's, each count also added to the
/// consumer's totals ([`RabbitConsumer::consumed`]).
#[derive(Default)]
struct Counters {
    processed: AtomicU64,
    skipped: AtomicU64,
    handler_failed: AtomicU64,
    database_failed: AtomicU64,
    ack_failed: AtomicU64,
    without_id: AtomicU64,
    rejected: AtomicU64,
    stream_errors: AtomicU64,
    totals: Option<Arc<Counters>>,
}

/// What became of a delivery (or the stream), counted in [`Counters`] and in
/// `outbox_consume_total`.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Processed,
    Skipped,
    HandlerFailed,
    DatabaseFailed,
    AckFailed,
    WithoutId,
    Rejected,
    StreamError,
}

impl Counters {
    /// One run's counters, adding to `totals` as well.
    fn for_run(totals: &Arc<Counters>) -> Self {
        Self {
            totals: Some(totals.clone()),
            ..Self::default()
        }
    }

    fn counter(&self, outcome: Outcome) -> &AtomicU64 {
        match outcome {
            Outcome::Processed => &self.processed,
            Outcome::Skipped => &self.skipped,
            Outcome::HandlerFailed => &self.handler_failed,
            Outcome::DatabaseFailed => &self.database_failed,
            Outcome::AckFailed => &self.ack_failed,
            Outcome::WithoutId => &self.without_id,
            Outcome::Rejected => &self.rejected,
            Outcome::StreamError => &self.stream_errors,
        }
    }

    fn add(&self, outcome: Outcome) {
        self.counter(outcome).fetch_add(1, Ordering::Relaxed);
        if let Some(totals) = &self.totals {
            totals.counter(outcome).fetch_add(1, Ordering::Relaxed);
        }
        let label = match outcome {
            Outcome::Processed => "processed",
            Outcome::Skipped => "skipped",
            Outcome::HandlerFailed => "handler_failed",
            Outcome::DatabaseFailed => "database_failed",
            Outcome::AckFailed => "ack_failed",
            Outcome::WithoutId => "without_id",
            Outcome::Rejected => "rejected",
            Outcome::StreamError => "stream_error",
        };
        metrics::counter!(CONSUME_METRIC, "broker" => "rabbitmq", "outcome" => label).increment(1);
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
            rejected: get(&self.rejected),
            stream_errors: get(&self.stream_errors),
        }
    }
}

/// A failed delivery, to be nack'd with requeue at `at`.
struct Nack {
    at: tokio::time::Instant,
    acker: Acker,
}

/// Why the consumer's stream stopped being read.
enum End {
    Stopped,
    Closed(lapin::Error),
    Cancelled,
}

impl<DB> RabbitConsumer<DB>
where
    DB: sqlx::Database,
    DB::Connection: InsertMessages,
{
    /// A consumer recording ids in `inbox`: one delivery at a time, failures nack'd after
    /// [`DEFAULT_NACK_DELAY`] doubling up to [`DEFAULT_MAX_NACK_DELAY`], deliveries without
    /// `message_id` handled by content ([`MissingId::ContentHash`]).
    pub fn new(inbox: Inbox<DB>) -> Self {
        Self {
            inbox,
            concurrency: 1,
            nack_delay: DEFAULT_NACK_DELAY,
            max_nack_delay: DEFAULT_MAX_NACK_DELAY,
            missing_id: MissingId::default(),
            totals: Arc::default(),
        }
    }

    /// What this consumer and its clones have consumed so far, over all their runs
    /// (each run's own counts are what it returns): read while a run goes on, for a
    /// progress display or a check that a queue was worked off.
    pub fn consumed(&self) -> Consumed {
        self.totals.snapshot()
    }

    /// Handles up to `n` deliveries at once (default 1, at least 1), each in its own
    /// transaction. Deliveries are spread over `n` lanes by routing key: those with the
    /// same routing key are handled one at a time in delivery order, so a routing key per
    /// aggregate (`orders.42`) keeps each aggregate's order. Give the channel a prefetch
    /// of about `10 * n`.
    ///
    /// Delivery order is queue order until a delivery is nack'd: its redelivery comes
    /// after the deliveries already sent ahead. For strict order under failures use a
    /// prefetch of 1 (one delivery out at a time, slower).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// A failed delivery (its handler or the database failed) is held, unacknowledged, for
    /// `first` and then nack'd with requeue; RabbitMQ redelivers it at once, so the delay
    /// is what keeps a failing message from spinning. It doubles with each earlier
    /// delivery RabbitMQ reports, up to `max` (defaults 1 s and 60 s): quorum queues count
    /// them (`x-delivery-count`), classic queues only say whether there was one. The lane
    /// goes on with other deliveries meanwhile; the held one keeps its prefetch slot.
    /// Keep `max` well under RabbitMQ's `consumer_timeout` (30 min by default), which
    /// closes a channel that holds a delivery longer. Bound redeliveries with a quorum
    /// queue's `x-delivery-limit` and a dead-letter exchange.
    pub fn nack_delay(mut self, first: Duration, max: Duration) -> Self {
        self.nack_delay = first;
        self.max_nack_delay = max.max(first);
        self
    }

    /// What to do with deliveries without a usable `message_id` (default
    /// [`MissingId::ContentHash`]).
    pub fn missing_id(mut self, policy: MissingId) -> Self {
        self.missing_id = policy;
        self
    }

    /// Consumes until the consumer ends, which is always an error (see [`consume`]).
    pub async fn run<E, F>(&self, consumer: Consumer, handler: F) -> Result<Consumed, ConsumeError>
    where
        E: fmt::Display,
        F: for<'t> Fn(
            &'t mut sqlx::Transaction<'static, DB>,
            &'t Received,
        ) -> BoxFuture<'t, Result<(), E>>,
    {
        self.run_until(consumer, handler, std::future::pending())
            .await
    }

    /// Consumes the deliveries of `consumer` until `stop` completes (then `Ok` with what
    /// was consumed) or the consumer ends (an error). For each delivery:
    ///
    /// 1. its [`Received`]: id = its AMQP `message_id` (the outbox message id the relay
    ///    published it with; without one see [`MissingId`]), subject = its routing key,
    ///    headers = its AMQP headers as strings (strings as UTF-8, lossily; numbers, booleans
    ///    and timestamps as written; decimals with their point; byte arrays in base64;
    ///    arrays and tables as JSON) plus `Content-Type` from the property when the headers
    ///    have none, payload = its body, `redelivered` = RabbitMQ's flag;
    /// 2. [`Inbox::handle`] runs `handler` in a transaction with the id recorded, or skips
    ///    it when the id was processed before;
    /// 3. processed or skipped: `basic.ack`, awaited (an ack that cannot be sent — the
    ///    channel closed — is logged: RabbitMQ requeues the delivery and the inbox skips it
    ///    the next time);
    /// 4. the handler failed: logged at WARN with the error, rolled back, and `basic.nack`
    ///    with requeue after the [`nack_delay`](Self::nack_delay); the database failed:
    ///    the same.
    ///
    /// Stopping: no delivery is taken after `stop` completes; those being handled finish
    /// (at most two per lane), failed ones waiting for their delay are nack'd at once, and
    /// the consumer is dropped, which cancels it. Deliveries RabbitMQ had already sent
    /// ahead stay unacknowledged until the channel closes: close it then, and RabbitMQ
    /// requeues them.
    ///
    /// The consumer ending on its own returns [`ConsumeError::Closed`] (with lapin's error)
    /// or [`ConsumeError::Cancelled`]; errors it reports and then goes on from (lapin's
    /// recovery) are logged and counted. Nothing in a delivery's content makes this panic.
    pub async fn run_until<E, F, S>(
        &self,
        consumer: Consumer,
        handler: F,
        stop: S,
    ) -> Result<Consumed, ConsumeError>
    where
        E: fmt::Display,
        F: for<'t> Fn(
            &'t mut sqlx::Transaction<'static, DB>,
            &'t Received,
        ) -> BoxFuture<'t, Result<(), E>>,
        S: Future<Output = ()>,
    {
        let name = self.inbox.consumer();
        if name.is_empty() || name.len() > MAX_CONSUMER_LEN || name.chars().any(char::is_control) {
            return Err(ConsumeError::Config(format!(
                "inbox consumer name `{}`: use 1 to {MAX_CONSUMER_LEN} bytes without control \
                 characters",
                shown(name)
            )));
        }
        let queue = consumer.queue().to_string();
        let counters = Counters::for_run(&self.totals);
        let (nacks, nack_requests) = mpsc::unbounded::<Nack>();
        // Room for one delivery waiting per lane: RabbitMQ's prefetch is the buffer.
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..self.concurrency)
            .map(|_| mpsc::channel::<Delivery>(0))
            .unzip();
        let handler = &handler;
        let counters_ref = &counters;
        let queue_ref = queue.as_str();
        let lanes = futures::future::join_all(receivers.into_iter().map(|mut lane| {
            let nacks = nacks.clone();
            async move {
                while let Some(delivery) = lane.next().await {
                    self.handle_one(delivery, queue_ref, handler, counters_ref, &nacks)
                        .await;
                }
            }
        }));
        drop(nacks);
        let dispatch = async move {
            let mut senders = senders;
            let mut consumer = consumer;
            let mut stop = std::pin::pin!(stop);
            let mut last_error = None;
            let end = loop {
                let item = tokio::select! {
                    biased;
                    () = &mut stop => break End::Stopped,
                    item = consumer.next() => item,
                };
                match item {
                    Some(Ok(delivery)) => {
                        last_error = None;
                        let lane = lane_of(delivery.routing_key.as_str(), senders.len());
                        // A lane ends only when its sender is dropped: sending never fails.
                        let _ = senders[lane].send(delivery).await;
                    }
                    Some(Err(error)) => {
                        counters_ref.add(Outcome::StreamError);
                        tracing::warn!(
                            queue = %shown(queue_ref), error = %error,
                            "the RabbitMQ consumer reported an error"
                        );
                        last_error = Some(error);
                    }
                    None => {
                        break match last_error.take() {
                            Some(error) => End::Closed(error),
                            None => End::Cancelled,
                        }
                    }
                }
            };
            // Dropping the consumer cancels it: no more deliveries are sent ahead.
            drop(consumer);
            drop(senders);
            end
        };
        let (end, _, ()) = futures::join!(dispatch, lanes, nacker(nack_requests));
        let consumed = counters.snapshot();
        match end {
            End::Stopped => Ok(consumed),
            End::Closed(source) => Err(ConsumeError::Closed {
                queue,
                source,
                consumed,
            }),
            End::Cancelled => Err(ConsumeError::Cancelled { queue, consumed }),
        }
    }

    /// Handles one delivery to its ack, or hands it to the nacker.
    async fn handle_one<E, F>(
        &self,
        delivery: Delivery,
        queue: &str,
        handler: &F,
        counters: &Counters,
        nacks: &mpsc::UnboundedSender<Nack>,
    ) where
        E: fmt::Display,
        F: for<'t> Fn(
            &'t mut sqlx::Transaction<'static, DB>,
            &'t Received,
        ) -> BoxFuture<'t, Result<(), E>>,
    {
        let Delivery {
            exchange,
            routing_key,
            redelivered,
            properties,
            data,
            acker,
            ..
        } = delivery;
        let (id, by_content) = match usable_id(&properties) {
            Some(id) => (id.to_owned(), false),
            None => {
                counters.add(Outcome::WithoutId);
                let given = properties
                    .message_id()
                    .as_ref()
                    .map(|id| format!("an unusable message_id `{}`", shown(id.as_str())))
                    .unwrap_or_else(|| "no message_id".to_owned());
                match self.missing_id {
                    MissingId::Reject => {
                        counters.add(Outcome::Rejected);
                        tracing::error!(
                            queue = %shown(queue), exchange = %shown(exchange.as_str()),
                            routing_key = %shown(routing_key.as_str()),
                            "a delivery with {given}: refused (nack without requeue), so \
                             RabbitMQ dead-letters it if the queue has a dead-letter \
                             exchange and drops it otherwise; publish through the outbox \
                             relay, or set message_id"
                        );
                        let options = BasicNackOptions {
                            multiple: false,
                            requeue: false,
                        };
                        if let Err(e) = acker.nack(options).await {
                            tracing::warn!(error = %e, "the nack was not sent");
                        }
                        return;
                    }
                    MissingId::ContentHash => {
                        let id = content_id(routing_key.as_str(), &properties, &data);
                        tracing::warn!(
                            queue = %shown(queue), exchange = %shown(exchange.as_str()),
                            routing_key = %shown(routing_key.as_str()), id = %id,
                            "a delivery with {given}: handled under an id made from its \
                             content, so identical messages count as one; publish through \
                             the outbox relay, or set message_id"
                        );
                        (id, true)
                    }
                }
            }
        };
        let received = Received {
            id,
            subject: routing_key.to_string(),
            headers: headers_of(&properties),
            payload: data,
            redelivered,
        };
        match self.inbox.handle(&received, handler).await {
            Ok(handled) => {
                match handled {
                    Handled::Processed => counters.add(Outcome::Processed),
                    Handled::Skipped => {
                        counters.add(Outcome::Skipped);
                        if by_content && !redelivered {
                            tracing::warn!(
                                queue = %shown(queue), routing_key = %shown(&received.subject),
                                id = %received.id,
                                "a first delivery without message_id has the content of one \
                                 processed before: skipped as the same message (a publisher's \
                                 retry); if it was another event, give the publisher \
                                 message_ids"
                            );
                        }
                    }
                }
                let why = match acker.ack(BasicAckOptions::default()).await {
                    Ok(true) => return,
                    Ok(false) => "the channel is closed".to_owned(),
                    Err(e) => e.to_string(),
                };
                counters.add(Outcome::AckFailed);
                tracing::warn!(
                    queue = %shown(queue), id = %shown(&received.id), error = %why,
                    "the ack of a handled delivery was not sent: RabbitMQ requeues it, and \
                     the inbox skips it"
                );
            }
            Err(failure) => {
                let delay = self.delay(earlier_deliveries(&properties, redelivered));
                let (outcome, what) = match &failure {
                    InboxError::Handler(_) => (Outcome::HandlerFailed, "the handler failed"),
                    InboxError::Database(_) | InboxError::NoId => {
                        (Outcome::DatabaseFailed, "the inbox's database failed")
                    }
                };
                counters.add(outcome);
                let error = match &failure {
                    InboxError::Handler(e) => e.to_string(),
                    other => other.to_string(),
                };
                tracing::warn!(
                    queue = %shown(queue), id = %shown(&received.id),
                    routing_key = %shown(&received.subject), redelivered, error = %error,
                    "{what}: rolled back, nack'd for redelivery in {delay:?}"
                );
                let at = tokio::time::Instant::now() + delay;
                // The nacker ends after every lane: it still listens.
                let _ = nacks.unbounded_send(Nack { at, acker });
            }
        }
    }

    /// The nack delay after `earlier` deliveries.
    fn delay(&self, earlier: u32) -> Duration {
        nack_delay_after(self.nack_delay, self.max_nack_delay, earlier)
    }
}

/// `first` doubled for each of `earlier` deliveries, at most `max`.
fn nack_delay_after(first: Duration, max: Duration, earlier: u32) -> Duration {
    first
        .saturating_mul(2u32.saturating_pow(earlier.min(20)))
        .min(max)
}

/// Nacks (with requeue) each failed delivery once its delay is over; when the lanes are
/// done, the ones still waiting at once.
async fn nacker(mut requests: mpsc::UnboundedReceiver<Nack>) {
    let mut waiting: Vec<Nack> = Vec::new();
    loop {
        let next = waiting.iter().map(|n| n.at).min();
        let due = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            request = requests.next() => match request {
                Some(nack) => waiting.push(nack),
                None => break,
            },
            () = due => {
                let now = tokio::time::Instant::now();
                let (due, later): (Vec<_>, Vec<_>) =
                    waiting.into_iter().partition(|n| n.at <= now);
                waiting = later;
                for nack in due {
                    requeue(&nack.acker).await;
                }
            }
        }
    }
    for nack in waiting {
        requeue(&nack.acker).await;
    }
}

async fn requeue(acker: &Acker) {
    let options = BasicNackOptions {
        multiple: false,
        requeue: true,
    };
    if let Err(e) = acker.nack(options).await {
        // The channel closed: RabbitMQ requeues the delivery anyway.
        tracing::debug!(error = %e, "the nack was not sent");
    }
}

/// The delivery's `message_id` when the inbox can record it as it is.
fn usable_id(properties: &BasicProperties) -> Option<&str> {
    let id = properties.message_id().as_ref()?.as_str();
    let ok =
        !id.is_empty() && id.len() <= MAX_PROCESSED_ID_LEN && !id.chars().any(char::is_control);
    ok.then_some(id)
}

/// How many times RabbitMQ says the message was delivered before: a quorum queue's
/// `x-delivery-count`, else 1 or 0 from the redelivered flag.
fn earlier_deliveries(properties: &BasicProperties, redelivered: bool) -> u32 {
    let counted = properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get("x-delivery-count"))
        .and_then(|v| match v {
            AMQPValue::ShortShortUInt(n) => Some(u64::from(*n)),
            AMQPValue::ShortUInt(n) => Some(u64::from(*n)),
            AMQPValue::LongUInt(n) => Some(u64::from(*n)),
            AMQPValue::ShortShortInt(n) => u64::try_from(*n).ok(),
            AMQPValue::ShortInt(n) => u64::try_from(*n).ok(),
            AMQPValue::LongInt(n) => u64::try_from(*n).ok(),
            AMQPValue::LongLongInt(n) => u64::try_from(*n).ok(),
            AMQPValue::Timestamp(n) => Some(*n),
            _ => None,
        });
    match counted {
        Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
        None => u32::from(redelivered),
    }
}

/// The id of a delivery without `message_id`: [`CONTENT_ID_PREFIX`] and the SHA-256 of its
/// routing key, body and the properties RabbitMQ never rewrites, each length-prefixed.
fn content_id(routing_key: &str, properties: &BasicProperties, body: &[u8]) -> String {
    let mut hash = Sha256::new();
    let mut field = |tag: u8, value: Option<&[u8]>| {
        hash.update([tag]);
        match value {
            Some(bytes) => {
                hash.update([1]);
                hash.update((bytes.len() as u64).to_be_bytes());
                hash.update(bytes);
            }
            None => hash.update([0]),
        }
    };
    let short = |s: &Option<ShortString>| s.as_ref().map(|s| s.as_str().as_bytes().to_vec());
    let timestamp = properties.timestamp().map(|t| t.to_be_bytes().to_vec());
    field(b'k', Some(routing_key.as_bytes()));
    field(b't', short(properties.content_type()).as_deref());
    field(b'e', short(properties.content_encoding()).as_deref());
    field(b'c', short(properties.correlation_id()).as_deref());
    field(b'y', short(properties.kind()).as_deref());
    field(b'a', short(properties.app_id()).as_deref());
    field(b'u', short(properties.user_id()).as_deref());
    field(b'r', short(properties.reply_to()).as_deref());
    field(b's', timestamp.as_deref());
    field(b'b', Some(body));
    let digest = hash.finalize();
    let mut id = String::with_capacity(CONTENT_ID_PREFIX.len() + 64);
    id.push_str(CONTENT_ID_PREFIX);
    for byte in digest {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// The AMQP headers as strings, and `Content-Type` from the property when they have none.
fn headers_of(properties: &BasicProperties) -> BTreeMap<String, String> {
    let mut headers: BTreeMap<String, String> = properties
        .headers()
        .as_ref()
        .map(|table| {
            table
                .inner()
                .iter()
                .map(|(name, value)| (name.to_string(), render(value)))
                .collect()
        })
        .unwrap_or_default();
    if let Some(content_type) = properties.content_type() {
        if !headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("content-type"))
        {
            headers.insert("Content-Type".to_owned(), content_type.to_string());
        }
    }
    headers
}

/// An AMQP header value as a string.
fn render(value: &AMQPValue) -> String {
    match value {
        AMQPValue::ShortString(s) => s.to_string(),
        AMQPValue::LongString(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        AMQPValue::Void => String::new(),
        AMQPValue::FieldArray(_) | AMQPValue::FieldTable(_) => as_json(value).to_string(),
        AMQPValue::ByteArray(bytes) => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(bytes.as_slice())
        }
        AMQPValue::Boolean(b) => b.to_string(),
        AMQPValue::ShortShortInt(n) => n.to_string(),
        AMQPValue::ShortShortUInt(n) => n.to_string(),
        AMQPValue::ShortInt(n) => n.to_string(),
        AMQPValue::ShortUInt(n) => n.to_string(),
        AMQPValue::LongInt(n) => n.to_string(),
        AMQPValue::LongUInt(n) => n.to_string(),
        AMQPValue::LongLongInt(n) => n.to_string(),
        AMQPValue::Timestamp(n) => n.to_string(),
        AMQPValue::Float(n) => n.to_string(),
        AMQPValue::Double(n) => n.to_string(),
        AMQPValue::DecimalValue(d) => {
            let digits = d.value.to_string();
            let scale = usize::from(d.scale);
            if scale == 0 {
                digits
            } else if digits.len() > scale {
                let (whole, fraction) = digits.split_at(digits.len() - scale);
                format!("{whole}.{fraction}")
            } else {
                format!("0.{}{digits}", "0".repeat(scale - digits.len()))
            }
        }
    }
}

/// An AMQP value as JSON, inside arrays and tables.
fn as_json(value: &AMQPValue) -> serde_json::Value {
    use serde_json::Value;
    match value {
        AMQPValue::FieldArray(items) => {
            Value::Array(items.as_slice().iter().map(as_json).collect())
        }
        AMQPValue::FieldTable(table) => Value::Object(
            table
                .inner()
                .iter()
                .map(|(k, v)| (k.to_string(), as_json(v)))
                .collect(),
        ),
        AMQPValue::Void => Value::Null,
        AMQPValue::Boolean(b) => Value::Bool(*b),
        AMQPValue::ShortShortInt(n) => Value::from(*n),
        AMQPValue::ShortShortUInt(n) => Value::from(*n),
        AMQPValue::ShortInt(n) => Value::from(*n),
        AMQPValue::ShortUInt(n) => Value::from(*n),
        AMQPValue::LongInt(n) => Value::from(*n),
        AMQPValue::LongUInt(n) => Value::from(*n),
        AMQPValue::LongLongInt(n) => Value::from(*n),
        AMQPValue::Timestamp(n) => Value::from(*n),
        AMQPValue::Float(n) => Value::from(f64::from(*n)),
        AMQPValue::Double(n) => Value::from(*n),
        other => Value::String(render(other)),
    }
}

/// The lane (of `lanes`) of deliveries with `routing_key`.
fn lane_of(routing_key: &str, lanes: usize) -> usize {
    use std::hash::Hasher as _;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    routing_key.hash(&mut hasher);
    (hasher.finish() % lanes as u64) as usize
}

/// `text` for a log line: control characters replaced, at most 255 characters.
fn shown(text: &str) -> String {
    text.chars()
        .take(255)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::FieldTable;

    #[test]
    fn content_ids_are_stable_and_tell_messages_apart() {
        let props = BasicProperties::default()
            .with_content_type("application/json".into())
            .with_timestamp(1_700_000_000);
        let id = content_id("orders.created", &props, b"{\"n\":1}");
        assert!(id.starts_with(CONTENT_ID_PREFIX) && id.len() == CONTENT_ID_PREFIX.len() + 64);
        assert!(id.len() <= MAX_PROCESSED_ID_LEN);
        // The same message again, with the headers a quorum queue adds to a redelivery.
        let mut redelivery_headers = FieldTable::default();
        redelivery_headers.insert("x-delivery-count".into(), AMQPValue::LongLongInt(1));
        let redelivered = props.clone().with_headers(redelivery_headers);
        assert_eq!(content_id("orders.created", &redelivered, b"{\"n\":1}"), id);
        // Anything the publisher set differently is another message.
        assert_ne!(content_id("orders.created", &props, b"{\"n\":2}"), id);
        assert_ne!(content_id("orders.updated", &props, b"{\"n\":1}"), id);
        let later = props.clone().with_timestamp(1_700_000_001);
        assert_ne!(content_id("orders.created", &later, b"{\"n\":1}"), id);
        // Fields cannot run into each other.
        let none = BasicProperties::default();
        assert_ne!(content_id("ab", &none, b"c"), content_id("a", &none, b"bc"));
    }

    #[test]
    fn headers_become_strings() {
        let mut inner = FieldTable::default();
        inner.insert("k".into(), AMQPValue::LongString("v".into()));
        let mut table = FieldTable::default();
        table.insert("text".into(), AMQPValue::LongString("ü ✓".into()));
        table.insert(
            "bad-utf8".into(),
            AMQPValue::LongString(vec![0xff, b'a'].into()),
        );
        table.insert("short".into(), AMQPValue::ShortString("s".into()));
        table.insert("n".into(), AMQPValue::LongLongInt(-7));
        table.insert("yes".into(), AMQPValue::Boolean(true));
        table.insert("at".into(), AMQPValue::Timestamp(1_700_000_000));
        table.insert(
            "price".into(),
            AMQPValue::DecimalValue(lapin::types::DecimalValue {
                scale: 2,
                value: 1999,
            }),
        );
        table.insert(
            "tiny".into(),
            AMQPValue::DecimalValue(lapin::types::DecimalValue { scale: 3, value: 5 }),
        );
        table.insert("bytes".into(), AMQPValue::ByteArray(vec![0u8, 255].into()));
        table.insert(
            "list".into(),
            AMQPValue::FieldArray(vec![AMQPValue::LongInt(1), AMQPValue::Void].into()),
        );
        table.insert("table".into(), AMQPValue::FieldTable(inner));
        table.insert("nothing".into(), AMQPValue::Void);
        let props = BasicProperties::default()
            .with_headers(table)
            .with_content_type("application/json".into());
        let h = headers_of(&props);
        let get = |k: &str| h.get(k).map(String::as_str);
        assert_eq!(get("text"), Some("ü ✓"));
        assert_eq!(get("bad-utf8"), Some("\u{fffd}a"));
        assert_eq!(get("short"), Some("s"));
        assert_eq!(get("n"), Some("-7"));
        assert_eq!(get("yes"), Some("true"));
        assert_eq!(get("at"), Some("1700000000"));
        assert_eq!(get("price"), Some("19.99"));
        assert_eq!(get("tiny"), Some("0.005"));
        assert_eq!(get("bytes"), Some("AP8="));
        assert_eq!(get("list"), Some("[1,null]"));
        assert_eq!(get("table"), Some(r#"{"k":"v"}"#));
        assert_eq!(get("nothing"), Some(""));
        assert_eq!(get("Content-Type"), Some("application/json"));
    }

    #[test]
    fn ids_the_inbox_cannot_record_are_not_used() {
        let with = |id: &str| BasicProperties::default().with_message_id(id.into());
        assert_eq!(usable_id(&with("01JOUTBOX")), Some("01JOUTBOX"));
        assert_eq!(usable_id(&with("")), None);
        assert_eq!(usable_id(&with("a\nb")), None);
        assert_eq!(usable_id(&BasicProperties::default()), None);
    }

    #[test]
    fn nack_delays_double_with_earlier_deliveries() {
        let delay =
            |earlier| nack_delay_after(Duration::from_millis(500), Duration::from_secs(3), earlier);
        assert_eq!(delay(0), Duration::from_millis(500));
        assert_eq!(delay(1), Duration::from_secs(1));
        assert_eq!(delay(2), Duration::from_secs(2));
        assert_eq!(delay(3), Duration::from_secs(3));
        assert_eq!(delay(u32::MAX), Duration::from_secs(3));
        let none = BasicProperties::default();
        assert_eq!(earlier_deliveries(&none, false), 0);
        assert_eq!(earlier_deliveries(&none, true), 1);
        let mut counted = FieldTable::default();
        counted.insert("x-delivery-count".into(), AMQPValue::LongLongInt(4));
        let quorum = BasicProperties::default().with_headers(counted);
        assert_eq!(earlier_deliveries(&quorum, true), 4);
    }
}
