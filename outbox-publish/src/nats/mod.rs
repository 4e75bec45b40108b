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
//! transaction that also records the message's `Nats-Msg-Id` in the [`Inbox`](crate::Inbox): a
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
pub(super) const BROKER: &str = "nats";

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
pub(super) fn shown(s: &str) -> String {
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

mod consume;

pub use consume::{
    consume, ConsumeError, Consumed, NatsConsumer, DEFAULT_MAX_NAK_DELAY, DEFAULT_NAK_DELAY,
};

/// The NATS client the relay and the consumer are built on (async-nats 0.51), so an
/// application names the same version for [`NatsRelay::new`]'s context and
/// [`NatsConsumer::run`]'s messages: `outbox_publish::nats::async_nats::connect(..)`.
pub use async_nats;
