//! Core of the `outbox` library: typed messages, transactional enqueue, handlers,
//! supervised workers and the backends they run on.
//!
//! Most applications use the `outbox` facade crate, which re-exports this crate together
//! with `#[derive(OutboxMessage)]`.

#![warn(missing_docs)]

pub mod admin;
pub mod backend;
pub mod clock;
mod counters;
pub mod endpoints;
mod enqueue;
mod error;
#[cfg(any(
    feature = "sqlx08",
    feature = "sea-orm",
    feature = "diesel-async",
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
mod foreign_error;
pub mod handler;
pub mod inbox;
pub mod kind;
mod layers;
mod message;
pub mod message_events;
mod outbox;
#[cfg(feature = "porttest")]
pub mod porttest;
mod shaping;
pub mod store;
mod suppression;
#[cfg(feature = "testing")]
pub mod testing;
mod transaction;
pub mod units;
mod worker;

pub use admin::{
    Admin, BreakerState, DeadLetter, DeadLetterFilter, DeadLetters, Endpoints, FailedAttempt,
    GroupProgress, Groups, HeldBy, HeldKey, LiveFilter, LiveMessage, LiveMessageDetail,
    LiveMessages, LivePage, LiveState, MinuteOutcomes, NewSuppression, ReplayFilter, ShapingAdmin,
    SuppressedMessage, Suppression, SuppressionFilter, SuppressionReason, SuppressionScope,
    Suppressions, TokenUse, TypeCounts, TypeOutcomes, TypeSummary, Unattended, WorkersSeen,
    MAX_SUPPRESSION_PAGE, MAX_TOKEN_BATCH, UNATTENDED_AFTER,
};
pub use counters::names as metric_names;
pub use counters::DeliveryCounts;
pub use enqueue::{
    enqueue_iter, enqueue_many, enqueue_many_with, enqueue_select, enqueue_stream, Enqueue,
    EnqueueConnection, EnqueueOptions, Enqueued, FanOut, FanOutError, InsertMessages, MessageId,
    NewMessage, QueuedRow, Select, SelectArg, SelectInsert, SelectWritten, MAX_GROUP_NAME_LEN,
};
#[cfg(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
pub use enqueue::{enqueue_many_blocking, BlockingConnection, EnqueueBlocking};
/// Stand-ins while no sync diesel feature is on: using them fails to compile with a
/// message that names the features.
#[cfg(not(any(
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
)))]
#[doc(hidden)]
pub use enqueue::{enqueue_many_blocking, BlockingConnection, EnqueueBlocking};
pub use error::{BoxError, EnqueueError, Error};
pub use handler::{
    Handler, HandlerError, HandlerErrorKind, HandlerFn, MessageContext, DESTINATION_PROBE_MAX,
};
pub use layers::{
    breaker::Breaker,
    orphan::Relevance,
    rate_limit::{RateLimit, GRANT_EVENT_TARGET as RATE_GRANT_EVENT_TARGET},
    retry::RetrySchedule,
};
pub use message::{
    validate_type_tag, DecodeError, InvalidMessage, MessageDefaults, OutboxMessage, Recipient,
    DEFAULT_MAX_PAYLOAD, MAX_IDEMPOTENCY_KEY_LEN, MAX_TYPE_TAG_LEN,
};
pub use message_events::{MessageEvent, NewMessageEvent};
pub use outbox::{
    shutdown_signal, DrainOptions, DrainReport, Outbox, QueueOptions, DEFAULT_SUMMARY_EVERY,
    START_CHECK_MESSAGES,
};
pub use shaping::{
    describe_duration, describe_rate, destination_key, Resolved, RuleAction, Shaping, ShapingRule,
    SiteLimit, SiteResolver, SiteState, MAX_PATTERN_SIZE, MAX_SHAPING_NAME_LEN, MAX_SHAPING_RULES,
};
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

/// The sqlx this library is built on (0.9): the application's pools, connections and
/// transactions must come from this version to enqueue through them.
pub use sqlx;

/// Stand-ins for the backends whose cargo feature is off, so that using one names the
/// feature to turn on (in the deprecation note the compiler prints beside the error).
mod missing_features {
    /// Off: PostgreSQL support is a cargo feature.
    #[cfg(not(feature = "postgres"))]
    #[deprecated(
        note = "PostgreSQL support is the `postgres` feature of outbox: add `features = [\"postgres\"]` to the outbox dependency in Cargo.toml"
    )]
    pub struct PostgresBackend;

    /// Off: MariaDB/MySQL support is a cargo feature.
    #[cfg(not(feature = "mysql"))]
    #[deprecated(
        note = "MariaDB/MySQL support is the `mysql` feature of outbox: add `features = [\"mysql\"]` to the outbox dependency in Cargo.toml"
    )]
    pub struct MySqlBackend;

    /// Off: SQLite support is a cargo feature (on by default).
    #[cfg(not(feature = "sqlite"))]
    #[deprecated(
        note = "SQLite support is the `sqlite` feature of outbox (a default feature): add `features = [\"sqlite\"]` to the outbox dependency, or keep the default features"
    )]
    pub struct SqliteBackend;

    /// Off: PostgreSQL support is a cargo feature.
    #[cfg(not(feature = "postgres"))]
    pub mod postgres {
        /// What `connect` takes while the `postgres` feature is off: nothing converts into
        /// it, so the call fails to compile and the type's name says what to do.
        pub enum EnablePostgresFeatureOfOutbox {}

        /// Off: PostgreSQL support is a cargo feature.
        #[deprecated(
            note = "PostgreSQL support is the `postgres` feature of outbox: add `features = [\"postgres\"]` to the outbox dependency in Cargo.toml"
        )]
        pub fn connect(feature_is_off: EnablePostgresFeatureOfOutbox) -> std::convert::Infallible {
            match feature_is_off {}
        }
    }

    /// Off: MariaDB/MySQL support is a cargo feature.
    #[cfg(not(feature = "mysql"))]
    pub mod mysql {
        /// What `connect` takes while the `mysql` feature is off: nothing converts into
        /// it, so the call fails to compile and the type's name says what to do.
        pub enum EnableMysqlFeatureOfOutbox {}

        /// Off: MariaDB/MySQL support is a cargo feature.
        #[deprecated(
            note = "MariaDB/MySQL support is the `mysql` feature of outbox: add `features = [\"mysql\"]` to the outbox dependency in Cargo.toml"
        )]
        pub fn connect(feature_is_off: EnableMysqlFeatureOfOutbox) -> std::convert::Infallible {
            match feature_is_off {}
        }
    }
}
#[cfg(not(feature = "sqlite"))]
#[doc(hidden)]
#[allow(deprecated)]
pub use missing_features::SqliteBackend;
#[cfg(not(feature = "mysql"))]
#[doc(hidden)]
#[allow(deprecated)]
pub use missing_features::{mysql, MySqlBackend};
#[cfg(not(feature = "postgres"))]
#[doc(hidden)]
#[allow(deprecated)]
pub use missing_features::{postgres, PostgresBackend};
