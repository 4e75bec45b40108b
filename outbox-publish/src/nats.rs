//! The NATS JetStream relay: [`NatsRelay`] publishes each [`Event`] on its subject once the
//! transaction that enqueued it has committed, and the outbox marks it done only when
//! JetStream acknowledged it (a `PubAck`: the stream stored it).
//!
//! ```no_run
//! use std::time::Duration;
//! use outbox_core::{Outbox, QueueOptions, RetrySchedule, SqliteBackend};
//! use outbox_publish::{
//!     nats::{ensure_stream, NatsRelay, StreamSettings},
//!     Event,
//! };
//!
//! # async fn demo(backend: SqliteBackend) -> Result<(), Box<dyn std::error::Error>> {
//! let client = async_nats::connect("nats://127.0.0.1:4222").await?;
//! let js = async_nats::jetstream::new(client);
//! // A stream must capture the subjects, or nothing is stored (see "Settings for 0 lost").
//! ensure_stream(&js, StreamSettings::new("ORDERS", ["orders.>"])).await?;
//!
//! let outbox = Outbox::new(backend).register_with::<Event, _>(
//!     NatsRelay::new(js),
//!     QueueOptions::new()
//!         .concurrency(32)
//!         // Republishes within the stream's duplicate window (2 min by default).
//!         .retry(RetrySchedule::fixed([10, 30, 60].map(Duration::from_secs))),
//! );
//! outbox.run().await?;
//! # Ok(()) }
//! ```
//!
//! # What is published
//!
//! The event's payload bytes on its subject, with the event's headers, `Nats-Msg-Id` set to
//! the outbox message id — the same on every attempt, so JetStream drops a re-publish within
//! the stream's duplicate window (an ack lost on the way back, a crash between the ack and
//! the outbox's bookkeeping) and a consumer's inbox drops one later — and `Content-Type`
//! when the event has one.
//!
//! # What an answer means
//!
//! | JetStream | the outbox |
//! |---|---|
//! | an ack, also one saying `duplicate` (stored by an earlier attempt) | done |
//! | no connection (closed, refused, still reconnecting after a second's wait), or the connection dropped while waiting for the ack | **down**: the type's circuit breaker holds every event (no attempts spent), one probe at a time; the breaker logs one WARN |
//! | "no responders": no stream captures the subject | an attempt, retried; the error names the subject and says to create a stream for it ([`ensure_stream`]) |
//! | a subject or header NATS cannot carry, a subject of the server's own (`$JS.API.…`, any starting with `$`), a payload over the server's `max_payload`, a failed `Nats-Expected-*` condition of the event's own headers | permanent: a dead letter with the reason |
//! | no ack within the ack timeout (10 s; [`NatsRelay::ack_timeout`]) while connected, any other error | an attempt, retried on the type's schedule |
//!
//! Metrics: `outbox_publish_total{broker="nats", outcome}` (`published`, `duplicate`,
//! `down`, `no_stream`, `refused`, `failed`) and `outbox_publish_seconds{broker="nats"}`
//! (from the publish to its ack, acknowledged events only).
//!
//! # Settings for 0 lost
//!
//! The outbox hands an event over at the ack, so the event is only as safe as the stream
//! that acknowledged it:
//!
//! * **file storage** (a memory stream loses every event on a restart): [`ensure_stream`]
//!   always creates file streams and refuses to adopt a memory one;
//! * **replicas ≥ 3 in production** ([`StreamSettings::replicas`]): an ack then means a
//!   quorum of servers stored the event, and losing one server loses nothing;
//! * **a duplicate window longer than the longest gap before a re-publish**
//!   ([`StreamSettings::duplicate_window`], 2 min by default): after a lost ack the relay
//!   publishes the event again on its next attempt — after the type's retry delay (the
//!   default schedule waits 60 s, then 5 min, 15 min, 1 h: give the type a schedule whose
//!   delays plus the ack timeout stay inside the window, as in the example above), or when
//!   the breaker closes after an outage. A re-publish outside the window is stored twice,
//!   with the same `Nats-Msg-Id`, and the consumer's inbox must drop it;
//! * **fsync**: the server writes each stored message to the operating system at once
//!   (a killed `nats-server` loses nothing acknowledged) but fsyncs file streams only every
//!   2 minutes by default (`sync_interval`). A relay that marks rows done on an ack inherits
//!   that durability: a power loss of the server (of a quorum of replicas, with replicas)
//!   within that interval loses events the outbox has already deleted. The mitigation is
//!   `jetstream { sync_interval: always }` in the server configuration (nats-server 2.10
//!   and later), at a throughput cost.
//!
//! # Consuming
//!
//! [`consume`] (or [`NatsConsumer`], with a concurrency and redelivery delays) reads a pull
//! consumer's messages and runs the application's handler for each inside a database
//! transaction that also records the message's `Nats-Msg-Id` in the [`Inbox`]: a
//! redelivered message, or a re-publish the stream stored twice, is acknowledged without
//! running the handler again. A message is acknowledged (and the ack's confirmation awaited)
//! only after its transaction committed; a failed one is nak'd with a delay.

use std::{
    str::FromStr,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use async_nats::{
    connection::State,
    header::NATS_MESSAGE_ID,
    jetstream::{
        context::{GetStreamErrorKind, PublishAckFuture, PublishErrorKind},
        message::PublishMessage,
        publish::PublishAck,
        stream, Context, ErrorCode,
    },
    Client, HeaderMap, HeaderName, HeaderValue,
};
use bytes::Bytes;
use futures::future::BoxFuture;
use outbox_core::{Handler, HandlerError, MessageContext, OutboxMessage};

use crate::event::{check_subject, Event};

/// How long the relay waits for JetStream's ack of a publish, by default.
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest ack timeout [`NatsRelay::ack_timeout`] takes; shorter is raised to it.
pub const MIN_ACK_TIMEOUT: Duration = Duration::from_millis(100);

/// A stream's duplicate window unless set ([`StreamSettings::duplicate_window`]): JetStream's
/// own default, two minutes.
pub const DEFAULT_DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// How often a publish waiting for its ack looks at the connection.
const CONNECTION_CHECK: Duration = Duration::from_millis(100);

/// How long a publish that finds the client disconnected waits for it to reconnect before
/// it calls NATS down (at most the ack timeout): a blip costs no failure, and during an
/// outage each worker slot fails once a second, not as fast as messages can be claimed.
const RECONNECT_WAIT: Duration = Duration::from_secs(1);

/// How often a publish waiting for the client to reconnect looks.
const RECONNECT_CHECK: Duration = Duration::from_millis(25);

/// The label of the relay's metrics.
const BROKER: &str = "nats";

/// Publishes [`Event`] messages to NATS JetStream: register it as the handler of the type
/// (`outbox.register::<Event, _>(NatsRelay::new(js))`). Cloning is cheap; clones share
/// the connection.
///
/// Each attempt publishes the event with `Nats-Msg-Id` = the outbox message id and waits
/// for the ack; the [module docs](self) say what each answer means and which stream
/// settings make an ack worth marking the event done.
#[derive(Clone, Debug)]
pub struct NatsRelay {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// A copy of the caller's context whose timeout is the ack timeout.
    js: Context,
    client: Client,
    ack_timeout: Duration,
}

impl NatsRelay {
    /// A relay publishing through `js` (its client's connection, its API prefix or
    /// domain), waiting [`DEFAULT_ACK_TIMEOUT`] for each ack. The relay uses its own copy
    /// of the context with the ack timeout as its timeout; `js` itself is unchanged.
    pub fn new(js: Context) -> Self {
        Self::with(js, DEFAULT_ACK_TIMEOUT)
    }

    /// A relay publishing through `client`'s connection, with the default JetStream
    /// context (API prefix `$JS.API`).
    pub fn from_client(client: Client) -> Self {
        Self::new(async_nats::jetstream::new(client))
    }

    /// Waits `timeout` (default 10 s, at least [`MIN_ACK_TIMEOUT`]) for each ack. A
    /// publish that gets none in time while connected is a failed attempt, retried on the
    /// type's schedule (its `Nats-Msg-Id` makes a re-publish harmless within the stream's
    /// duplicate window).
    pub fn ack_timeout(self, timeout: Duration) -> Self {
        Self::with(self.inner.js.clone(), timeout)
    }

    fn with(mut js: Context, timeout: Duration) -> Self {
        let ack_timeout = timeout.max(MIN_ACK_TIMEOUT);
        js.set_timeout(ack_timeout);
        let client = js.client();
        Self {
            inner: Arc::new(Inner {
                js,
                client,
                ack_timeout,
            }),
        }
    }

    /// Publishes `event` with `Nats-Msg-Id` = `id` and waits for JetStream's ack — what
    /// the handler does for each attempt (with the outbox message id), for callers that
    /// relay outside a worker. The ack says which stream stored the event, at which
    /// sequence, and whether it was a `duplicate` of an earlier publish with this id
    /// within the stream's duplicate window (then nothing new was stored).
    ///
    /// Fails with the [`HandlerError`] the outbox acts on (see the [module docs](self)):
    /// `down` without a connection, `retry` when no stream captures the subject or no ack
    /// came, `permanent` for what NATS can never carry. Never panics on the event's
    /// content.
    pub async fn publish(&self, id: &str, event: &Event) -> Result<PublishAck, HandlerError> {
        let outcome = self.try_publish(id, event).await;
        let label = match &outcome {
            Ok((ack, _)) if ack.duplicate => "duplicate",
            Ok(_) => "published",
            Err(failure) => failure.label(),
        };
        metrics::counter!("outbox_publish_total", "broker" => BROKER, "outcome" => label)
            .increment(1);
        match outcome {
            Ok((ack, took)) => {
                metrics::histogram!("outbox_publish_seconds", "broker" => BROKER)
                    .record(took.as_secs_f64());
                Ok(ack)
            }
            Err(failure) => {
                tracing::debug!(id, subject = %event.subject, outcome = label, "publish failed");
                Err(failure.into_error())
            }
        }
    }

    async fn try_publish(
        &self,
        id: &str,
        event: &Event,
    ) -> Result<(PublishAck, Duration), Failure> {
        let message = prepare(id, event).map_err(Failure::Refused)?;
        self.connected().await?;
        let connects = self.connects();
        let started = Instant::now();
        let subject = event.subject.clone();
        let ack = match self.inner.js.send_publish(subject, message).await {
            Ok(ack) => self.await_ack(ack, connects).await,
            Err(e) => Err(Waited::Failed(e)),
        };
        match ack {
            Ok(ack) => Ok((ack, started.elapsed())),
            Err(Waited::ConnectionLost) => Err(Failure::Down(
                "the connection to NATS dropped before JetStream's ack: the event may or may \
                 not be stored; it is published again with the same Nats-Msg-Id once NATS \
                 is back"
                    .to_owned(),
            )),
            Err(Waited::Failed(e)) => Err(self.classify(event, e, connects)),
        }
    }

    /// Waits up to [`RECONNECT_WAIT`] for the client to be connected; `Down` if it is not.
    async fn connected(&self) -> Result<(), Failure> {
        let client = &self.inner.client;
        let deadline = Instant::now() + RECONNECT_WAIT.min(self.inner.ack_timeout);
        loop {
            let state = client.connection_state();
            if state == State::Connected {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Failure::Down(format!(
                    "not connected to NATS ({state}; the client reconnects on its own): \
                     the event waits for the connection"
                )));
            }
            tokio::time::sleep(RECONNECT_CHECK).await;
        }
    }

    /// How many times the client has connected (its first connection and every reconnect).
    fn connects(&self) -> u64 {
        self.inner
            .client
            .statistics()
            .connects
            .load(Ordering::Relaxed)
    }

    /// True when the connection dropped (or came back, a new one) since `connects`.
    fn connection_changed(&self, connects: u64) -> bool {
        self.inner.client.connection_state() != State::Connected || self.connects() != connects
    }

    /// Waits for the ack, or until the connection the publish went out on is gone: an ack
    /// to it can no longer come.
    async fn await_ack(&self, ack: PublishAckFuture, connects: u64) -> Result<PublishAck, Waited> {
        let ack = std::future::IntoFuture::into_future(ack);
        tokio::pin!(ack);
        let mut tick = tokio::time::interval(CONNECTION_CHECK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                result = &mut ack => return result.map_err(Waited::Failed),
                _ = tick.tick() => {
                    if self.connection_changed(connects) {
                        return Err(Waited::ConnectionLost);
                    }
                }
            }
        }
    }

    /// What a failed publish of `event` means.
    fn classify(
        &self,
        event: &Event,
        error: async_nats::jetstream::context::PublishError,
        connects: u64,
    ) -> Failure {
        let subject = shown(&event.subject);
        match error.kind() {
            PublishErrorKind::StreamNotFound => Failure::NoStream(format!(
                "no JetStream stream captures subject `{subject}` (no responders): create a \
                 stream whose subjects match it (outbox_publish::nats::ensure_stream, or \
                 `nats stream add`), and check that JetStream is enabled on the server; the \
                 event is retried and stored once a stream captures it"
            )),
            PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe
                if self.connection_changed(connects) =>
            {
                Failure::Down(format!(
                    "the connection to NATS dropped before JetStream's ack ({error}): the \
                     event is published again with the same Nats-Msg-Id once NATS is back"
                ))
            }
            PublishErrorKind::BrokenPipe => Failure::Down(format!(
                "the NATS connection closed before JetStream's ack ({error})"
            )),
            PublishErrorKind::TimedOut => Failure::Failed(format!(
                "no ack from JetStream within {:?} for subject `{subject}` (the stream's \
                 leader may be unavailable or the server overloaded): published again with \
                 the same Nats-Msg-Id on the next attempt",
                self.inner.ack_timeout
            )),
            PublishErrorKind::MaxPayloadExceeded => Failure::Refused(format!(
                "the event ({} bytes of payload) is larger than the NATS server accepts \
                 ({error}): raise the server's max_payload or publish less",
                event_payload_len(event)
            )),
            PublishErrorKind::WrongLastMessageId | PublishErrorKind::WrongLastSequence => {
                Failure::Refused(format!(
                    "the stream refused the event on subject `{subject}`: {error} (a \
                     Nats-Expected-* header of the event did not hold)"
                ))
            }
            _ if self.connection_changed(connects) => Failure::Down(format!(
                "publishing on `{subject}` failed while the NATS connection dropped: {error}"
            )),
            _ => Failure::Failed(format!("publishing on `{subject}` failed: {error}")),
        }
    }
}

impl<S: Send + Sync + 'static> Handler<Event, S> for NatsRelay {
    fn call(
        &self,
        message: Event,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let this = self.clone();
        let id = ctx.id().to_string();
        Box::pin(async move { this.publish(&id, &message).await.map(|_| ()) })
    }
}

/// How waiting for an ack ended without one.
enum Waited {
    /// The connection the publish went out on dropped.
    ConnectionLost,
    /// The client said why.
    Failed(async_nats::jetstream::context::PublishError),
}

/// A failed publish, by what the outbox does with it.
enum Failure {
    /// NATS is unreachable: the breaker.
    Down(String),
    /// No stream for the subject: retried.
    NoStream(String),
    /// NATS can never take it: a dead letter.
    Refused(String),
    /// Anything else: retried.
    Failed(String),
}

impl Failure {
    fn label(&self) -> &'static str {
        match self {
            Failure::Down(_) => "down",
            Failure::NoStream(_) => "no_stream",
            Failure::Refused(_) => "refused",
            Failure::Failed(_) => "failed",
        }
    }

    fn into_error(self) -> HandlerError {
        match self {
            Failure::Down(why) => HandlerError::down(why),
            Failure::NoStream(why) | Failure::Failed(why) => HandlerError::retry(why),
            Failure::Refused(why) => HandlerError::permanent(why),
        }
    }
}

/// The message to publish for `event` with id `id`, or why NATS cannot carry it.
fn prepare(id: &str, event: &Event) -> Result<PublishMessage, String> {
    // Enqueue validated it; a row written otherwise (by hand, by an older version) is
    // checked again here rather than trusted.
    event
        .validate()
        .map_err(|e| format!("the event cannot be published: {e}"))?;
    check_subject(&event.subject)?;
    if event.subject.starts_with('$') {
        return Err(format!(
            "subject `{}` starts with `$`: those are the server's own (the JetStream API, \
             the system account), never an event's",
            shown(&event.subject)
        ));
    }
    let mut headers = HeaderMap::new();
    for (name, value) in &event.headers {
        let parsed_name = HeaderName::from_str(name)
            .map_err(|_| format!("header name `{}` is not valid in NATS", shown(name)))?;
        let parsed_value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{}` is not valid in NATS", shown(name)))?;
        headers.append(parsed_name, parsed_value);
    }
    if let Some(content_type) = &event.content_type {
        let value = HeaderValue::from_str(content_type)
            .map_err(|_| "the content type is not a valid NATS header value".to_owned())?;
        headers.insert("Content-Type", value);
    }
    let msg_id = HeaderValue::from_str(id)
        .map_err(|_| format!("message id `{}` is not a valid header value", shown(id)))?;
    headers.insert(NATS_MESSAGE_ID, msg_id);
    Ok(PublishMessage::build()
        .payload(Bytes::from(event.payload.to_bytes()))
        .headers(headers))
}

fn event_payload_len(event: &Event) -> usize {
    event.payload.to_bytes().len()
}

/// At most 60 characters of `s`, for error texts.
fn shown(s: &str) -> String {
    s.chars().take(60).collect()
}

/// What [`ensure_stream`] makes of a stream: its name, the subjects it captures, file
/// storage, its duplicate window and replicas. The [module docs](self#settings-for-0-lost)
/// say which values lose nothing.
///
/// ```
/// use std::time::Duration;
/// use outbox_publish::nats::StreamSettings;
///
/// let settings = StreamSettings::new("ORDERS", ["orders.>"])
///     .duplicate_window(Duration::from_secs(600))
///     .replicas(3);
/// assert_eq!(settings.config().num_replicas, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSettings {
    name: String,
    subjects: Vec<String>,
    duplicate_window: Duration,
    replicas: usize,
}

impl StreamSettings {
    /// A stream `name` (no spaces, `.`, `*` or `>`) capturing `subjects` (wildcards
    /// allowed: `orders.>`), on file storage, with a [`DEFAULT_DUPLICATE_WINDOW`] and one
    /// replica.
    pub fn new(
        name: impl Into<String>,
        subjects: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            name: name.into(),
            subjects: subjects.into_iter().map(Into::into).collect(),
            duplicate_window: DEFAULT_DUPLICATE_WINDOW,
            replicas: 1,
        }
    }

    /// How long JetStream remembers a `Nats-Msg-Id` to drop a re-publish (default 2 min,
    /// at least 1 s): longer than the longest gap between a publish whose ack was lost
    /// and its re-publish (the type's retry delays plus the ack timeout, an outage held
    /// by the breaker). The server keeps the ids of that window in memory.
    pub fn duplicate_window(mut self, window: Duration) -> Self {
        self.duplicate_window = window;
        self
    }

    /// How many servers store each event (1 to 5; default 1): 3 or more in production,
    /// so an ack means a quorum stored it. More than 1 needs a JetStream cluster.
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stream configuration for a new stream, for callers that set more of it
    /// (limits, retention) before creating it themselves.
    pub fn config(&self) -> stream::Config {
        stream::Config {
            name: self.name.clone(),
            subjects: self.subjects.clone(),
            storage: stream::StorageType::File,
            duplicate_window: self.duplicate_window,
            num_replicas: self.replicas,
            ..Default::default()
        }
    }

    /// Why these settings cannot make a stream, if they cannot.
    fn check(&self) -> Result<(), String> {
        if self.subjects.is_empty() {
            return Err(format!(
                "stream `{}` captures no subject: name the subjects its events are published \
                 on (e.g. `orders.>`)",
                shown(&self.name)
            ));
        }
        if self.duplicate_window < Duration::from_secs(1) {
            return Err(format!(
                "a duplicate window of {:?} drops no re-publish: give at least 1 s (default \
                 2 min)",
                self.duplicate_window
            ));
        }
        if !(1..=5).contains(&self.replicas) {
            return Err(format!(
                "{} replicas: a stream has 1 to 5 (3 in production)",
                self.replicas
            ));
        }
        Ok(())
    }
}

/// Why [`ensure_stream`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The settings cannot make a stream; the text says what to change.
    #[error("{0}")]
    Settings(String),
    /// The stream exists on memory storage, which loses every event on a restart.
    #[error(
        "stream `{0}` keeps its messages in memory: every event it acknowledged is lost when \
         the server restarts; recreate it with file storage (JetStream cannot change a \
         stream's storage)"
    )]
    MemoryStorage(String),
    /// NATS refused the request or did not answer.
    #[error("cannot create or update stream `{name}`: {source}")]
    Nats {
        /// The stream.
        name: String,
        /// What the client or the server said.
        #[source]
        source: async_nats::Error,
    },
}

/// Creates stream `settings.name()`, or brings an existing one to `settings`: its subjects,
/// duplicate window and replicas are set, everything else the operator configured
/// (limits, retention, placement) is kept, and nothing is sent when it already matches.
/// Returns the stream's info as the server now has it.
///
/// Fails when the settings are invalid, when the existing stream is on memory storage
/// ([`StreamError::MemoryStorage`]: JetStream cannot convert it), and with what NATS said
/// otherwise (no JetStream, a subject another stream captures, more replicas than
/// servers, no answer).
pub async fn ensure_stream(
    js: &Context,
    settings: StreamSettings,
) -> Result<stream::Info, StreamError> {
    settings.check().map_err(StreamError::Settings)?;
    let name = settings.name.clone();
    let nats = |source: async_nats::Error| StreamError::Nats {
        name: name.clone(),
        source,
    };
    match js.get_stream(&settings.name).await {
        Ok(existing) => {
            let info = existing.cached_info().clone();
            if info.config.storage != stream::StorageType::File {
                return Err(StreamError::MemoryStorage(settings.name));
            }
            let mut config = info.config.clone();
            config.subjects = settings.subjects;
            config.duplicate_window = settings.duplicate_window;
            config.num_replicas = settings.replicas;
            if config == info.config {
                return Ok(info);
            }
            js.update_stream(&config)
                .await
                .map_err(|e| nats(Box::new(e)))
        }
        Err(e)
            if matches!(
                e.kind(),
                GetStreamErrorKind::JetStream(ref j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND
            ) =>
        {
            js.create_stream(settings.config())
                .await
                .map(|stream| stream.cached_info().clone())
                .map_err(|e| nats(Box::new(e)))
        }
        Err(e) => Err(nats(Box::new(e))),
    }
}

// ---------------------------------------------------------------------------------------
// The consuming side: JetStream messages through the inbox

use std::{
    collections::BTreeMap,
    hash::{Hash, Hasher},
    sync::atomic::AtomicU64,
};

use async_nats::jetstream::{message::AckKind, Message as JetStreamMessage};
use futures::{SinkExt as _, Stream, StreamExt as _};
use outbox_core::{
    inbox::{MAX_CONSUMER_LEN, MAX_PROCESSED_ID_LEN},
    sqlx, InsertMessages,
};

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

/// The NATS client the relay and the consumer are built on (async-nats 0.51), so an
/// application names the same version for [`NatsRelay::new`]'s context and
/// [`NatsConsumer::run`]'s messages: `outbox_publish::nats::async_nats::connect(..)`.
pub use async_nats;
