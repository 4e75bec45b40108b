//! The RabbitMQ relay: publishes each [`Event`] to an exchange with its subject as the
//! routing key, waits for the broker's publisher confirm, and turns every answer into the
//! outbox's failure classes.
//!
//! ```no_run
//! use outbox_core::{Outbox, QueueOptions, SqliteBackend};
//! use outbox_publish::{rabbitmq::RabbitRelay, Event};
//!
//! # async fn demo(backend: SqliteBackend) -> Result<(), Box<dyn std::error::Error>> {
//! let relay = RabbitRelay::connect("amqp://guest:guest@127.0.0.1:5672/%2f", "orders").await?;
//! let outbox = Outbox::new(backend)
//!     .register_with::<Event, _>(relay, QueueOptions::new().concurrency(16));
//! outbox.run().await?;
//! # Ok(()) }
//! ```
//!
//! What is published: the payload as its bytes; `mandatory` (an event no queue takes comes
//! back instead of vanishing); properties `delivery_mode = 2` (persistent), `message_id` =
//! the outbox message id (the same on every attempt: a consumer's inbox drops a
//! re-publication), `content_type` when the event has one, `timestamp` = when it was
//! enqueued (unix seconds), and the event's headers as AMQP headers (long strings).
//!
//! | the broker says | the handler returns |
//! |---|---|
//! | ack | `Ok`: the event is done |
//! | basic.return (no queue bound for the routing key) | [`HandlerError::retry`], naming the exchange and routing key: the event was **not** delivered |
//! | nack | [`HandlerError::retry`] |
//! | channel closed with 404 (the exchange does not exist) | [`HandlerError::retry`], naming the exchange; the next event gets a new channel |
//! | another channel error (403, 406, …) | [`HandlerError::retry`] with the broker's words |
//! | no connection, connection closed or refused, no confirm in time | [`HandlerError::down`]: the type's circuit breaker holds every event without spending attempts; the next call reconnects |
//!
//! **Channels.** Publishes go through a pool of channels in confirm mode on one connection;
//! each channel carries one publish at a time, so the pool grows to the number of
//! concurrent workers (the confirm window). One channel per publish in flight is what makes
//! the answers exact: lapin hands a `basic.return` to whichever confirm completes next on
//! its channel (a multiple ack completes them in no set order), and gives out delivery tags
//! before the frames are queued, so two publishes racing on one channel can each get the
//! other's answer. Measured on RabbitMQ 3.10 with 50 mandatory publishes in flight on one
//! channel, half of them unroutable: 2 to 23 of 500 unroutable ones came back as plain acks
//! — events that would have been marked done without reaching any queue.
//!
//! **Reconnects.** A relay made with [`RabbitRelay::connect`] opens a new connection on the
//! first call after the old one closed; concurrent calls wait for that one attempt and
//! share its outcome. A relay made with [`RabbitRelay::new`] from a connection of the
//! application's cannot reopen it: once it closed, every call is `down` (unless lapin's
//! own recovery, `ConnectionProperties::enable_auto_recover`, brings it back).
//!
//! **Consuming.** [`consume`] (or a [`RabbitConsumer`] for more settings) runs the
//! application's handler for each delivery of a `lapin::Consumer` through an [`Inbox`](crate::Inbox): in
//! the application's database transaction together with the `message_id`, acknowledged
//! after it committed, so a redelivery (a lost ack, a re-publish after a lost confirm) is
//! skipped. See [`RabbitConsumer::run_until`] for what happens to each delivery.

use std::{
    fmt,
    net::IpAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use futures::future::BoxFuture;
use lapin::{
    options::{BasicPublishOptions, ConfirmSelectOptions},
    protocol::{AMQPErrorKind, AMQPHardError, AMQPSoftError},
    types::{AMQPValue, FieldTable, LongString, ShortString},
    uri::AMQPUri,
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ErrorKind,
};
use outbox_core::{Handler, HandlerError, MessageContext};

use crate::Event;

/// How long a publish waits for the broker's confirm by default.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);

/// How long opening a connection may take by default.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Most idle channels kept open for the next publishes; more are closed.
const MAX_IDLE_CHANNELS: usize = 256;

/// Longest exchange name, in bytes (an AMQP short string).
const MAX_EXCHANGE_LEN: usize = 255;

/// The name of the metric counting publishes, by `broker` and `outcome`.
const METRIC: &str = "outbox_publish_total";

/// Why a relay could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RabbitError {
    /// The exchange name is longer than AMQP allows.
    #[error("exchange name of {0} bytes: RabbitMQ exchange names have at most {MAX_EXCHANGE_LEN}")]
    Exchange(usize),
    /// The URI is not an AMQP URI.
    #[error(
        "not an AMQP URI ({0}): expected amqp[s]://user:password@host:port/vhost \
         (the default vhost `/` is `%2f`)"
    )]
    Uri(String),
    /// The broker could not be reached, refused the login, or did not answer in time:
    /// what failed, naming the broker without credentials (`amqp://host:port/vhost`).
    #[error("{0}")]
    Connect(String),
}

/// Publishes [`Event`]s to a RabbitMQ exchange: register it as the handler of the type
/// (`outbox.register::<Event, _>(relay)`). Cheap to clone; clones share the connection
/// and its channels. See the [module](self) for what is published and what each answer
/// of the broker becomes.
#[derive(Clone)]
pub struct RabbitRelay {
    shared: Arc<Shared>,
    confirm_timeout: Duration,
    connect_timeout: Duration,
}

struct Shared {
    exchange: ShortString,
    source: Source,
    /// The connection, replaced (under this lock, once for all waiting calls) when closed.
    link: tokio::sync::Mutex<Link>,
    /// Connection attempts made so far: a call that waited for the lock while another one
    /// tried shares that attempt's failure instead of trying again.
    attempts: AtomicU64,
    /// Channels in confirm mode, each free for one publish.
    idle: Mutex<Vec<Channel>>,
    /// The connection in use, readable without waiting for a reconnect.
    current: Mutex<Option<Arc<Connection>>>,
}

/// Where connections come from.
// One per relay, behind its Arc: the size does not matter.
#[allow(clippy::large_enum_variant)]
enum Source {
    /// Opened (again) from this URI.
    Uri {
        uri: AMQPUri,
        properties: ConnectionProperties,
    },
    /// Given by the application, not reopened.
    Given,
}

struct Link {
    connection: Option<Arc<Connection>>,
    /// The failure of the last connection attempt, if it failed.
    failure: Option<String>,
}

impl fmt::Debug for RabbitRelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RabbitRelay")
            .field("broker", &self.broker())
            .field("exchange", &self.exchange())
            .field("confirm_timeout", &self.confirm_timeout)
            .finish_non_exhaustive()
    }
}

impl RabbitRelay {
    /// A relay that publishes to `exchange` (`""` is the default exchange, where the
    /// routing key names a queue) over `connection`, the application's own (a
    /// `Connection`, or an `Arc<Connection>` the application shares with its consumers);
    /// the relay opens its own channels on it.
    ///
    /// It cannot reopen that connection: once it is closed, every publish fails as
    /// [`HandlerError::down`] saying so. Use [`connect`](Self::connect) for a relay that
    /// reconnects. Fails when `exchange` is longer than 255 bytes.
    pub fn new(
        connection: impl Into<Arc<Connection>>,
        exchange: impl Into<String>,
    ) -> Result<Self, RabbitError> {
        Self::with_source(exchange.into(), Source::Given, Some(connection.into()))
    }

    /// Connects to the broker at `uri` (`amqp://user:password@host:5672/%2f`; `amqps://`
    /// for TLS) and publishes to `exchange`. The connection is opened again, on the next
    /// publish, whenever it closes.
    ///
    /// Fails when the URI is malformed, the exchange name is longer than 255 bytes, or the
    /// broker cannot be reached or refuses the login within [`CONNECT_TIMEOUT`] (the
    /// message names the broker, never the password). The exchange itself is not checked
    /// here: a missing one fails each publish, saying so, until it is declared.
    pub async fn connect(uri: &str, exchange: impl Into<String>) -> Result<Self, RabbitError> {
        Self::connect_with(uri, ConnectionProperties::default(), exchange).await
    }

    /// [`connect`](Self::connect) with lapin's connection properties (a connection name, an
    /// authentication provider).
    pub async fn connect_with(
        uri: &str,
        properties: ConnectionProperties,
        exchange: impl Into<String>,
    ) -> Result<Self, RabbitError> {
        let mut parsed: AMQPUri = uri.parse().map_err(|e: String| {
            // The parser's words may quote the URI back, password and all.
            RabbitError::Uri(if e.contains(uri) {
                "unreadable".to_owned()
            } else {
                e
            })
        })?;
        // amq-protocol reads only domain names from a URI: an address (`127.0.0.1`,
        // `[::1]`) would become `localhost`.
        if let Some(ip) = literal_host(uri) {
            parsed.authority.host = ip.to_string();
        }
        let relay = Self::with_source(
            exchange.into(),
            Source::Uri {
                uri: parsed,
                properties,
            },
            None,
        )?;
        relay
            .connection()
            .await
            .map_err(|failure| RabbitError::Connect(failure.reason))?;
        Ok(relay)
    }

    fn with_source(
        exchange: String,
        source: Source,
        connection: Option<Arc<Connection>>,
    ) -> Result<Self, RabbitError> {
        let len = exchange.len();
        let exchange = ShortString::try_new(exchange).map_err(|_| RabbitError::Exchange(len))?;
        Ok(Self {
            shared: Arc::new(Shared {
                exchange,
                source,
                link: tokio::sync::Mutex::new(Link {
                    connection: connection.clone(),
                    failure: None,
                }),
                attempts: AtomicU64::new(0),
                idle: Mutex::new(Vec::new()),
                current: Mutex::new(connection),
            }),
            confirm_timeout: CONFIRM_TIMEOUT,
            connect_timeout: CONNECT_TIMEOUT,
        })
    }

    /// How long a publish waits for the broker's confirm (default [`CONFIRM_TIMEOUT`]);
    /// past it the publish is `down` (a broker that blocks publishers during a memory or
    /// disk alarm confirms nothing) and may still arrive: the retry publishes it again
    /// with the same `message_id`.
    pub fn confirm_timeout(mut self, timeout: Duration) -> Self {
        self.confirm_timeout = timeout;
        self
    }

    /// How long opening a connection may take (default [`CONNECT_TIMEOUT`]) before the
    /// publish is `down`.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The exchange events are published to.
    pub fn exchange(&self) -> &str {
        self.shared.exchange.as_str()
    }

    /// The broker as `amqp://host:port/vhost` (no credentials; the default vhost `/` is
    /// `%2f`), for a relay made with
    /// [`connect`](Self::connect); `None` for one made from a connection.
    pub fn broker(&self) -> Option<String> {
        match &self.shared.source {
            Source::Uri { uri, .. } => {
                let host = &uri.authority.host;
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                let vhost = uri.vhost.replace('%', "%25").replace('/', "%2f");
                Some(format!(
                    "{}://{host}:{}/{vhost}",
                    uri.scheme, uri.authority.port
                ))
            }
            Source::Given => None,
        }
    }

    /// Publishes `event` as outbox message `id`, enqueued at `enqueued`, and waits for
    /// the broker's confirm.
    async fn publish(
        &self,
        event: &Event,
        id: &str,
        enqueued: Option<SystemTime>,
    ) -> Result<(), HandlerError> {
        let exchange = self.exchange();
        let routing_key = ShortString::try_new(event.subject.as_str()).map_err(|_| {
            count("invalid");
            HandlerError::permanent(format!(
                "routing key of {} bytes: AMQP allows at most 255",
                event.subject.len()
            ))
        })?;
        let properties = properties(event, id, enqueued).inspect_err(|_| count("invalid"))?;
        let payload = event.payload.to_bytes();
        let channel = match self.channel().await {
            Ok(channel) => channel,
            Err(failure) => {
                count(failure.outcome);
                return Err(failure.into_error());
            }
        };
        let options = BasicPublishOptions {
            mandatory: true,
            immediate: false,
        };
        let sent = tokio::time::timeout(self.confirm_timeout, async {
            channel
                .basic_publish(
                    self.shared.exchange.clone(),
                    routing_key,
                    options,
                    &payload,
                    properties,
                )
                .await?
                .await
        })
        .await;
        let key = event.subject.as_str();
        let (outcome, result) = match sent {
            Ok(Ok(Confirmation::Ack(None))) => {
                self.give_back(channel);
                ("published", Ok(()))
            }
            Ok(Ok(Confirmation::Ack(Some(returned)) | Confirmation::Nack(Some(returned)))) => {
                self.give_back(channel);
                let why = returned.reply_text.as_str();
                let code = returned.reply_code;
                (
                    "unroutable",
                    Err(HandlerError::retry(format!(
                        "RabbitMQ returned the event ({code} {why}): no queue is bound to \
                         exchange `{exchange}` for routing key `{key}`; bind a queue (or set \
                         an alternate exchange) for it. The event was not delivered and is \
                         retried"
                    ))),
                )
            }
            Ok(Ok(Confirmation::Nack(None))) => {
                self.give_back(channel);
                (
                    "nacked",
                    Err(HandlerError::retry(format!(
                        "RabbitMQ refused the event (basic.nack) on exchange `{exchange}`, \
                         routing key `{key}`: a queue could not take it (a full queue with \
                         overflow reject-publish, or a queue's internal error); retried"
                    ))),
                )
            }
            Ok(Ok(Confirmation::NotRequested)) => (
                // Only on a channel without confirm mode, which the pool never holds.
                "refused",
                Err(HandlerError::retry(
                    "RabbitMQ channel not in confirm mode: the publish was not confirmed; retried",
                )),
            ),
            Ok(Err(error)) => {
                let failure = self.failure(&error, "publishing");
                (failure.outcome, Err(failure.into_error()))
            }
            Err(_) => {
                // The channel (and its pending confirm) is dropped, which closes it.
                let blocked = self.current().is_some_and(|c| c.status().blocked());
                let why = if blocked {
                    "RabbitMQ blocks publishers (a memory or disk alarm)"
                } else {
                    "the broker is overloaded or the connection is gone without notice"
                };
                (
                    "timeout",
                    Err(HandlerError::down(format!(
                        "RabbitMQ did not confirm the event within {:?} on exchange \
                         `{exchange}`: {why}; it may still arrive, and is published again \
                         with the same message_id",
                        self.confirm_timeout
                    ))),
                )
            }
        };
        count(outcome);
        result
    }

    /// A channel in confirm mode, free for one publish: an idle one, or a new one on the
    /// connection (opened again if it closed).
    async fn channel(&self) -> Result<Channel, Failure> {
        loop {
            let idle = self.idle().pop();
            match idle {
                Some(channel) if channel.status().connected() => return Ok(channel),
                Some(_) => continue,
                None => break,
            }
        }
        let connection = self.connection().await?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|e| self.failure(&e, "opening a channel"))?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(|e| self.failure(&e, "turning on publisher confirms"))?;
        Ok(channel)
    }

    /// Keeps `channel` for the next publish.
    fn give_back(&self, channel: Channel) {
        if !channel.status().connected() {
            return;
        }
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE_CHANNELS {
            idle.push(channel);
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Channel>> {
        self.shared.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open connection, or a new one: one attempt at a time, and calls that waited
    /// for another's failed attempt share its failure.
    async fn connection(&self) -> Result<Arc<Connection>, Failure> {
        let attempts_before = self.shared.attempts.load(Ordering::SeqCst);
        let mut link = self.shared.link.lock().await;
        if let Some(connection) = &link.connection {
            if connection.status().connected() {
                return Ok(Arc::clone(connection));
            }
        }
        if let Some(failure) = &link.failure {
            if self.shared.attempts.load(Ordering::SeqCst) != attempts_before {
                return Err(Failure::down(failure.clone()));
            }
        }
        let Source::Uri { uri, properties } = &self.shared.source else {
            let state = match link.connection.as_ref().map(|c| c.status()) {
                Some(s) if s.reconnecting() => "reconnecting",
                Some(s) if s.closing() => "closing",
                Some(s) if s.errored() => "failed",
                _ => "closed",
            };
            return Err(Failure::down(format!(
                "the RabbitMQ connection given to RabbitRelay::new is {state} and \
                 the relay cannot reopen it: build it with RabbitRelay::connect, or enable \
                 lapin's auto-recovery on that connection"
            )));
        };
        self.set_connection(&mut link, None);
        self.shared.attempts.fetch_add(1, Ordering::SeqCst);
        let broker = self.broker().unwrap_or_default();
        let opened = tokio::time::timeout(
            self.connect_timeout,
            Connection::connect_uri(uri.clone(), properties.clone()),
        )
        .await;
        match opened {
            Ok(Ok(connection)) => {
                let connection = Arc::new(connection);
                self.set_connection(&mut link, Some(Arc::clone(&connection)));
                link.failure = None;
                Ok(connection)
            }
            Ok(Err(error)) => {
                let why = format!("cannot connect to RabbitMQ at {broker}: {error}");
                link.failure = Some(why.clone());
                Err(Failure::down(why))
            }
            Err(_) => {
                let why = format!(
                    "cannot connect to RabbitMQ at {broker}: no answer within {:?}",
                    self.connect_timeout
                );
                link.failure = Some(why.clone());
                Err(Failure::down(why))
            }
        }
    }

    /// What `error`, met while `doing`, means for the event.
    fn failure(&self, error: &lapin::Error, doing: &str) -> Failure {
        let exchange = self.exchange();
        match error.kind() {
            ErrorKind::ProtocolError(amqp) => match amqp.kind() {
                AMQPErrorKind::Soft(AMQPSoftError::NOTFOUND) => Failure {
                    outcome: "no_exchange",
                    reason: format!(
                        "RabbitMQ has no exchange `{exchange}` ({} {}): declare it before \
                         publishing; the event is retried",
                        amqp.get_id(),
                        amqp.get_message()
                    ),
                    down: false,
                },
                AMQPErrorKind::Soft(_) => Failure {
                    outcome: "refused",
                    reason: format!(
                        "RabbitMQ closed the channel while {doing} to exchange `{exchange}`: \
                         {} {}",
                        amqp.get_id(),
                        amqp.get_message()
                    ),
                    down: false,
                },
                AMQPErrorKind::Hard(hard) => {
                    let what = match hard {
                        AMQPHardError::CONNECTIONFORCED => "the broker closed the connection",
                        _ => "the broker ended the connection",
                    };
                    Failure::down(format!(
                        "{what} while {doing} ({} {})",
                        amqp.get_id(),
                        amqp.get_message()
                    ))
                }
            },
            ErrorKind::ChannelsLimitReached => Failure {
                outcome: "refused",
                reason: format!(
                    "no channel free on the RabbitMQ connection while {doing}: more concurrent \
                     publishes than the broker's channel_max; lower the type's concurrency"
                ),
                down: false,
            },
            ErrorKind::InvalidChannelState(..) | ErrorKind::InvalidChannel(_)
                if self.connected() =>
            {
                Failure {
                    outcome: "refused",
                    reason: format!(
                        "the RabbitMQ channel closed while {doing} ({error}); the next publish \
                         opens a new one"
                    ),
                    down: false,
                }
            }
            _ => Failure::down(format!("RabbitMQ connection lost while {doing}: {error}")),
        }
    }

    /// Replaces the connection in use (under the reconnect lock); the old one's channels
    /// leave the pool.
    fn set_connection(&self, link: &mut Link, connection: Option<Arc<Connection>>) {
        self.idle().clear();
        *self
            .shared
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = connection.clone();
        link.connection = connection;
    }

    fn current(&self) -> Option<Arc<Connection>> {
        self.shared
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the connection in use is open.
    fn connected(&self) -> bool {
        self.current().is_some_and(|c| c.status().connected())
    }
}

impl<S: Send + Sync + 'static> Handler<Event, S> for RabbitRelay {
    fn call(
        &self,
        event: Event,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let this = self.clone();
        let id = ctx.id().to_string();
        let enqueued = ctx.enqueued_at();
        Box::pin(async move { this.publish(&event, &id, enqueued).await })
    }
}

/// A failed step, as the outbox will see it.
struct Failure {
    outcome: &'static str,
    reason: String,
    down: bool,
}

impl Failure {
    fn down(reason: String) -> Self {
        Self {
            outcome: "down",
            reason,
            down: true,
        }
    }

    fn into_error(self) -> HandlerError {
        if self.down {
            HandlerError::down(self.reason)
        } else {
            HandlerError::retry(self.reason)
        }
    }
}

/// The AMQP properties of `event` published as outbox message `id`.
fn properties(
    event: &Event,
    id: &str,
    enqueued: Option<SystemTime>,
) -> Result<BasicProperties, HandlerError> {
    let short = |what: &str, text: &str| {
        ShortString::try_new(text).map_err(|_| {
            HandlerError::permanent(format!(
                "{what} of {} bytes: AMQP allows at most 255",
                text.len()
            ))
        })
    };
    let mut headers = FieldTable::default();
    for (name, value) in &event.headers {
        headers.insert(
            short("header name", name)?,
            AMQPValue::LongString(LongString::from(value.as_bytes())),
        );
    }
    let timestamp = enqueued
        .unwrap_or_else(SystemTime::now)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_message_id(short("message id", id)?)
        .with_timestamp(timestamp)
        .with_headers(headers);
    if let Some(content_type) = &event.content_type {
        properties = properties.with_content_type(short("content type", content_type)?);
    }
    Ok(properties)
}

fn count(outcome: &'static str) {
    metrics::counter!(METRIC, "broker" => "rabbitmq", "outcome" => outcome).increment(1);
}

/// The host of `uri` when it is an IP address (`127.0.0.1`, `[::1]`).
fn literal_host(uri: &str) -> Option<IpAddr> {
    let rest = uri.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(inner) = host_port.strip_prefix('[') {
        inner.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    host.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_hosts_are_read_from_the_uri() {
        let ip = |s: &str| literal_host(s).map(|ip| ip.to_string());
        assert_eq!(
            ip("amqp://guest:guest@127.0.0.1:5672/%2f").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(ip("amqps://u:p@[::1]:5671/vh").as_deref(), Some("::1"));
        assert_eq!(ip("amqp://10.0.0.7"), Some("10.0.0.7".to_owned()));
        assert_eq!(ip("amqp://u:p@rabbit.internal:5672/"), None);
        assert_eq!(ip("amqp://u:p@4.4@rabbit:5672/"), None);
        assert_eq!(ip("not a uri"), None);
    }

    #[tokio::test]
    async fn errors_name_the_broker_never_the_password() {
        for bad in [
            "amqp://user:s3cret@[::1:5672/",
            "amqp://user:s3cret@host:99999/",
        ] {
            let e = RabbitRelay::connect(bad, "x").await.unwrap_err();
            assert!(matches!(e, RabbitError::Uri(_)), "{e}");
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
        let e = RabbitRelay::connect("amqp://user:s3cret@127.0.0.1:1/%2f", "x")
            .await
            .unwrap_err()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(
            e.contains("cannot connect to RabbitMQ at amqp://127.0.0.1:1/%2f"),
            "{e}"
        );
        let e = RabbitRelay::connect("amqp://127.0.0.1:1/%2f", "x".repeat(256))
            .await
            .unwrap_err();
        assert!(matches!(e, RabbitError::Exchange(256)), "{e}");
    }

    #[test]
    fn properties_carry_the_id_headers_type_and_persistence() {
        let event = Event::bytes("a.b", vec![1, 2])
            .header("tenant", "acme")
            .content_type("application/octet-stream");
        let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let p = properties(&event, "01ID", Some(at)).unwrap();
        assert_eq!(p.delivery_mode(), &Some(2));
        assert_eq!(p.message_id().as_ref().map(|s| s.as_str()), Some("01ID"));
        assert_eq!(p.timestamp(), &Some(1_700_000_000));
        assert_eq!(
            p.content_type().as_ref().map(|s| s.as_str()),
            Some("application/octet-stream")
        );
        let headers = p.headers().as_ref().unwrap();
        assert_eq!(
            headers.inner().get("tenant"),
            Some(&AMQPValue::LongString("acme".into()))
        );
        // Too long for AMQP: refused with the reason, never a panic.
        let long = Event::bytes("a", vec![]).header("x".repeat(300), "v");
        let err = properties(&long, "id", None).unwrap_err();
        assert!(
            err.to_string().contains("header name of 300 bytes"),
            "{err}"
        );
    }
}

mod consume;

pub use consume::{
    consume, ConsumeError, Consumed, MissingId, RabbitConsumer, CONTENT_ID_PREFIX,
    DEFAULT_MAX_NACK_DELAY, DEFAULT_NACK_DELAY,
};

/// The AMQP client the relay and the consumer are built on (lapin 4.12), so an application
/// names the same version for [`RabbitRelay::new`]'s connection and [`RabbitConsumer::run`]'s
/// consumer: `outbox_publish::rabbitmq::lapin::Connection::connect(..)`.
pub use lapin;
