#![doc = include_str!("../README.md")]
//!
//! # Crate layout
//!
//! This facade re-exports [`outbox_core`] (messages, enqueue, handlers, workers,
//! backends) and `#[derive(OutboxMessage)]` from `outbox-derive`; with the `smtp` feature
//! it also re-exports `outbox-smtp` as [`smtp`]. The [`guide`] module holds one guide per
//! concept.
//!
//! Inside `outbox-core`, one interface separates the database-neutral code from the
//! databases: `store/` (the port) holds the traits and records — claim, settle, heartbeat,
//! rescue, prune, buckets, pauses, dead letters, groups, breakers, shaping, suppressions,
//! counts — and `backend/{sqlite,postgres,mysql}` implement it by port area, with their SQL
//! in `.sql` files in the same area folders. Above the port: `worker/` (one engine for
//! every database: claims, prefetch, flusher, leases, as an apalis-core backend), `layers/`
//! (retry, pause, precheck, orphan, breaker, shaping, rate limit — they decide, as values,
//! and the worker's flusher writes) and `admin/`. Backends never import the layers, the
//! worker or the admin. Message kinds (email in `outbox-smtp`) are guests: they supply a
//! destination, failure classes and an admin view through [`kind`] and know nothing of the
//! core's insides.

#![warn(missing_docs)]

pub use outbox_core::*;
pub use outbox_derive::OutboxMessage;
#[cfg(feature = "publish")]
pub use outbox_derive::PublishEvent;

/// Email over SMTP as an outbox message (feature `smtp`).
#[cfg(feature = "smtp")]
#[doc(inline)]
pub use outbox_smtp as smtp;

/// Publishing events to NATS JetStream or RabbitMQ, and the consumer's inbox (feature
/// `publish`; the relays with `nats` and `rabbitmq`).
#[cfg(feature = "publish")]
#[doc(inline)]
pub use outbox_publish as publish;

/// Outgoing webhooks as an outbox message (feature `webhook`).
#[cfg(feature = "webhook")]
#[doc(inline)]
pub use outbox_webhook as webhook;

#[cfg(feature = "cli")]
pub mod cli;

/// The web admin: an axum router with the operator's pages (feature `web`).
#[cfg(feature = "web")]
pub mod web;

/// The guides: one per concept, each with examples that compile against this crate.
///
/// They are also Markdown files under `docs/guides/` in the repository. Start with
/// [`messages`](guide::messages) and [`workers`](guide::workers); email is documented with
/// `outbox::smtp` (the `outbox-smtp` crate, feature `smtp`).
pub mod guide {
    /// Messages and enqueue: the derive, options, idempotency keys, batches, transactions.
    #[doc = include_str!("../docs/guides/messages.md")]
    pub mod messages {}

    /// Workers: the `Outbox` builder, `QueueOptions`, run and drain, shutdown, leases.
    #[doc = include_str!("../docs/guides/workers.md")]
    pub mod workers {}

    /// Retries and dead letters: schedules, handler errors, snooze, requeue and purge.
    #[doc = include_str!("../docs/guides/retries.md")]
    pub mod retries {}

    /// Outages: the circuit breaker that holds a type while its downstream is down.
    #[doc = include_str!("../docs/guides/outages.md")]
    pub mod outages {}

    /// Orphans: messages whose subject is gone, completed without their handler.
    #[doc = include_str!("../docs/guides/orphans.md")]
    pub mod orphans {}

    /// Rate limits: token buckets shared across types and processes.
    #[doc = include_str!("../docs/guides/rate_limits.md")]
    pub mod rate_limits {}

    /// Pause and resume a message type in every process.
    #[doc = include_str!("../docs/guides/pause.md")]
    pub mod pause {}

    /// Groups (campaigns): progress, pause, cancel, completion hook; fan-out from a query.
    #[doc = include_str!("../docs/guides/groups.md")]
    pub mod groups {}

    /// Tables, retention and idempotency keys.
    #[doc = include_str!("../docs/guides/tables.md")]
    pub mod tables {}

    /// Failure modes: what happens on each failure, per database.
    #[doc = include_str!("../docs/guides/failure_modes.md")]
    pub mod failure_modes {}

    /// Backends: SQLite, PostgreSQL and MariaDB/MySQL, their URLs, wake-ups and migrations.
    #[doc = include_str!("../docs/guides/backends.md")]
    pub mod backends {}

    /// Writing a message kind: destination, failure classes, admin view.
    #[doc = include_str!("../docs/guides/kinds.md")]
    pub mod kinds {}

    /// Testing an application that uses the outbox.
    #[doc = include_str!("../docs/guides/testing.md")]
    pub mod testing {}

    /// Deliverability: DKIM signing, one-click unsubscribe, the suppression list, provider
    /// events and per-domain traffic shaping (feature `dkim`).
    #[cfg(feature = "dkim")]
    #[doc = include_str!("../docs/guides/deliverability.md")]
    pub mod deliverability {}

    /// Outgoing webhooks: endpoints and secret rotation, signatures, SSRF protection, what
    /// each answer means, the receiving side (feature `webhook`).
    #[cfg(feature = "webhook")]
    #[doc = include_str!("../docs/guides/webhooks.md")]
    pub mod webhooks {}

    /// Publishing events to NATS JetStream or RabbitMQ: the event, the relays and what each
    /// broker answer means, broker settings for "0 lost", order per key, the consumer's
    /// inbox, Kafka (features `nats` and `rabbitmq`).
    #[cfg(all(feature = "nats", feature = "rabbitmq", feature = "sqlite"))]
    #[doc = include_str!("../docs/guides/publishing.md")]
    pub mod publishing {}

    /// Operating: the command line, the web admin, metrics and traces.
    #[doc = include_str!("../docs/guides/operating.md")]
    pub mod operating {}
}

/// The names most applications need: `use outbox::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "mysql")]
    pub use crate::MySqlBackend;
    #[cfg(feature = "postgres")]
    pub use crate::PostgresBackend;
    #[cfg(feature = "sqlite")]
    pub use crate::SqliteBackend;
    pub use crate::{
        enqueue_iter, enqueue_many, enqueue_stream, retry_transaction, Admin, Breaker,
        DeadLetterFilter, Enqueue, EnqueueError, EnqueueOptions, Enqueued, HandlerError,
        MessageContext, Outbox, OutboxMessage, QueueOptions, RateLimit, Retention, RetrySchedule,
    };
}
