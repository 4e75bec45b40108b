//! Errors returned by the library's own operations (enqueue, migrate, run, drain).

/// A boxed error as handlers and layers pass them around.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why an enqueue was refused. Nothing was written when this is returned, except for
/// [`EnqueueError::Database`], after which the caller should roll its transaction back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnqueueError {
    /// The message could not be turned into JSON.
    #[error(
        "message of type `{type_tag}` cannot be serialized to JSON: {source}; \
         check its Serialize impl (for example, map keys must be strings)"
    )]
    Serialize {
        /// Type tag of the message.
        type_tag: &'static str,
        /// What serde_json reported.
        source: serde_json::Error,
    },
    /// The idempotency key is empty, too long or contains control characters.
    #[error("idempotency key of a `{type_tag}` message is invalid: {reason}")]
    InvalidKey {
        /// Type tag of the message.
        type_tag: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The message's own checks ([`OutboxMessage::validate`](crate::OutboxMessage::validate)) refused it.
    #[error("`{type_tag}` message is invalid: {source}")]
    InvalidMessage {
        /// Type tag of the message.
        type_tag: &'static str,
        /// The field and the reason.
        source: crate::InvalidMessage,
    },
    /// An enqueue option has a value the library cannot honour.
    #[error("enqueue option `{option}` for a `{type_tag}` message is invalid: {reason}")]
    InvalidOption {
        /// Type tag of the message.
        type_tag: &'static str,
        /// The option's name.
        option: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The message type's tag cannot be used as a queue name.
    #[error("type tag of `{rust_type}` is invalid: {reason}")]
    InvalidTypeTag {
        /// The Rust type whose tag is wrong.
        rust_type: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The database refused the insert; roll the transaction back.
    #[error(
        "database error while enqueuing `{type_tag}` messages: {source}; \
         roll back the transaction, it may hold part of the batch"
    )]
    Database {
        /// Type tag of the message.
        type_tag: &'static str,
        /// What the driver reported.
        source: sqlx::Error,
    },
}

/// Errors from setting up or running the outbox (migrations, workers, signals).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A query issued by the library failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// Applying the schema migrations failed.
    #[error("schema migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The outbox was configured in a way that cannot work.
    #[error("configuration error: {0}")]
    Config(String),
    /// Waiting for the shutdown signal failed.
    #[error("cannot listen for shutdown signals: {0}")]
    Signal(#[from] std::io::Error),
}
