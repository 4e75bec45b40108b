#![doc = include_str!("../README.md")]
//!
//! # Crate layout
//!
//! This facade re-exports [`outbox_core`] (messages, enqueue, handlers, workers,
//! backends) and `#[derive(OutboxMessage)]` from `outbox-derive`; with the `smtp` feature
//! it also re-exports `outbox-smtp` as [`smtp`].

pub use outbox_core::*;
pub use outbox_derive::OutboxMessage;

/// Email over SMTP as an outbox message (feature `smtp`).
#[cfg(feature = "smtp")]
#[doc(inline)]
pub use outbox_smtp as smtp;

#[cfg(feature = "cli")]
pub mod cli;

/// The web admin: an axum router with the operator's pages (feature `web`).
#[cfg(feature = "web")]
pub mod web;

/// The names most applications need: `use outbox::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "mysql")]
    pub use crate::MySqlBackend;
    #[cfg(feature = "postgres")]
    pub use crate::PostgresBackend;
    #[cfg(feature = "sqlite")]
    pub use crate::SqliteBackend;
    pub use crate::{
        enqueue_many, retry_transaction, Admin, DeadLetterFilter, Enqueue, EnqueueError,
        EnqueueOptions, Enqueued, HandlerError, MessageContext, Outbox, OutboxMessage,
        QueueOptions, RateLimit, Retention, RetrySchedule,
    };
}
