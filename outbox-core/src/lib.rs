//! Core of the `outbox` library: typed messages, transactional enqueue, handlers,
//! supervised workers and the backends they run on.
//!
//! Most applications use the `outbox` facade crate, which re-exports this crate together
//! with `#[derive(OutboxMessage)]`.

pub mod admin;
pub mod backend;
pub mod clock;
mod counters;
mod enqueue;
mod error;
pub mod handler;
mod layers;
mod message;
mod outbox;
#[cfg(feature = "porttest")]
pub mod porttest;
pub mod store;
mod transaction;
mod worker;

pub use admin::{
    Admin, BreakerState, DeadLetter, DeadLetterFilter, DeadLetters, FailedAttempt, GroupProgress,
    Groups, LiveFilter, LiveMessage, LiveMessageDetail, LiveMessages, LivePage, LiveState,
    MinuteOutcomes, TypeCounts, TypeOutcomes,
};
pub use counters::names as metric_names;
pub use counters::DeliveryCounts;
pub use enqueue::{
    enqueue_iter, enqueue_many, enqueue_many_with, enqueue_select, enqueue_stream, Enqueue,
    EnqueueConnection, EnqueueOptions, Enqueued, FanOut, FanOutError, InsertMessages, MessageId,
    NewMessage, Select, SelectArg, SelectInsert, SelectWritten, MAX_GROUP_NAME_LEN,
};
pub use error::{BoxError, EnqueueError, Error};
pub use handler::{Handler, HandlerError, HandlerErrorKind, MessageContext};
pub use layers::{
    breaker::Breaker,
    orphan::Relevance,
    rate_limit::{RateLimit, GRANT_EVENT_TARGET as RATE_GRANT_EVENT_TARGET},
    retry::RetrySchedule,
};
pub use message::{
    validate_type_tag, DecodeError, InvalidMessage, MessageDefaults, OutboxMessage,
    DEFAULT_MAX_PAYLOAD, MAX_IDEMPOTENCY_KEY_LEN, MAX_TYPE_TAG_LEN,
};
pub use outbox::{shutdown_signal, DrainOptions, DrainReport, Outbox, QueueOptions};
pub use store::Retention;
pub use transaction::{
    retry_transaction, retry_transaction_with, RetryableError, TransactionRetry,
};

#[cfg(feature = "mysql")]
pub use backend::mysql::{self, MySqlBackend};
#[cfg(feature = "postgres")]
pub use backend::postgres::{self, PostgresBackend};
#[cfg(feature = "sqlite")]
pub use backend::sqlite::{self, SqliteBackend};
