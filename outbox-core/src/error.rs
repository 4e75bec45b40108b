//! Errors returned by the library's own operations (enqueue, migrate, run, drain).

/// A boxed error as handlers and layers pass them around.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why an enqueue was refused. Nothing was written when this is returned, except for
/// [`EnqueueError::Database`], after which the caller should roll its transaction back.
/// After [`EnqueueError::TransactionAborted`] and [`EnqueueError::LockTimeout`] nothing of
/// the caller's transaction will be written at all: run it again.
#[derive(thiserror::Error)]
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
        source: crate::message::InvalidMessage,
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
    /// The outbox's tables do not exist: the schema was never migrated.
    #[error(
        "the outbox table `{table}` does not exist: call `outbox.migrate()` at start-up, \
         before the first enqueue (roll this transaction back)"
    )]
    NotMigrated {
        /// The missing table.
        table: String,
    },
    /// The message is larger than the type allows.
    #[error(
        "a `{type_tag}` message is {size} bytes as JSON; the limit is {limit} bytes: \
         send large content by reference (a URL or a row id), or raise the limit with \
         `#[outbox(max_payload = \"4MiB\")]` on the type or \
         `EnqueueOptions::max_payload(bytes)` on the call"
    )]
    PayloadTooLarge {
        /// Type tag of the message.
        type_tag: &'static str,
        /// The serialized size, in bytes.
        size: usize,
        /// The limit that applied, in bytes.
        limit: usize,
    },
    /// The database aborted the caller's whole transaction (a serialization failure or a
    /// deadlock, typically two transactions enqueueing the same idempotency key at
    /// `REPEATABLE READ` or `SERIALIZABLE`). Nothing of the transaction is written, the
    /// caller's own rows included: PostgreSQL fails its later statements and rolls back at
    /// `commit()`; on MariaDB/MySQL, whose session would go on in autocommit, the outbox
    /// leaves the connection in a read-only transaction, so later writes fail and
    /// `commit()` writes nothing. Run the whole transaction again
    /// ([`retry_transaction`](crate::retry_transaction)).
    #[error(
        "the database aborted the transaction while enqueuing a `{type_tag}` message: \
         {source}; {}; roll back and run the whole transaction again, for example with \
         `outbox::retry_transaction`",
        after_abort(.source)
    )]
    TransactionAborted {
        /// Type tag of the message.
        type_tag: &'static str,
        /// What the driver reported.
        source: sqlx::Error,
    },
    /// The insert waited for a lock until the database gave up. The caller's transaction
    /// is lost, the caller's own rows included: PostgreSQL aborts it; on MariaDB/MySQL
    /// (which undo only the statement) the outbox rolls it back and leaves the connection
    /// in a read-only transaction; on SQLite (which keeps it open) the outbox marks it so
    /// that its `commit()` fails. Run the whole transaction again
    /// ([`retry_transaction`](crate::retry_transaction)).
    #[error(
        "enqueuing a `{type_tag}` message waited for a lock until the database's lock \
         timeout: {source}; {}; roll back and run the whole transaction again \
         (`outbox::retry_transaction` does), and keep transactions that enqueue short",
        after_lock_timeout(.source)
    )]
    LockTimeout {
        /// Type tag of the message.
        type_tag: &'static str,
        /// What the driver reported.
        source: sqlx::Error,
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
    /// The connection broke while the database received a large insert statement: most
    /// likely the statement was larger than the server accepts (MariaDB/MySQL
    /// `max_allowed_packet`, 16 MiB by default), and the server dropped the connection.
    #[error(
        "the connection broke while the database received a {bytes}-byte insert of \
         `{type_tag}` messages ({source}): on MariaDB/MySQL this is most likely a statement \
         larger than the server's max_allowed_packet (16 MiB by default): raise it \
         (SET GLOBAL max_allowed_packet = ..., or max_allowed_packet in the server's \
         configuration), or keep messages smaller (the type's max_payload, \
         EnqueueOptions::max_payload); the transaction is lost: begin it again"
    )]
    StatementTooLarge {
        /// Type tag of the message.
        type_tag: &'static str,
        /// Payload bytes in the statement.
        bytes: usize,
        /// What the driver reported.
        source: sqlx::Error,
    },
}

/// Errors from setting up or running the outbox (migrations, workers, signals).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A query issued by the library failed.
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// The outbox's tables do not exist: the schema was never migrated.
    #[error(
        "the outbox table `{table}` does not exist: call `outbox.migrate()` at start-up \
         (or `outbox migrate --database-url …`) before using the outbox"
    )]
    NotMigrated {
        /// The missing table.
        table: String,
    },
    /// The database could not be opened by a `connect` function: the URL is for another
    /// database or malformed, the server cannot be reached, or it refused the login or
    /// does not have the database. The message says which and what to do; it never shows
    /// the URL's password.
    #[error("{message}")]
    Connect {
        /// What was wrong and what to do.
        message: String,
        /// What the database driver reported, when it got that far.
        #[source]
        source: Option<sqlx::Error>,
    },
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

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        match Fault::of(&e) {
            Fault::NotMigrated(table) => Error::NotMigrated { table },
            _ => Error::Database(e),
        }
    }
}

impl EnqueueError {
    /// The error for a failed insert of `type_tag` messages, by what the database said.
    /// The error of a failed insert of `bytes` payload bytes: a connection that broke
    /// under a large statement (1 MiB or more) is most likely the server's packet limit.
    pub(crate) fn from_insert(type_tag: &'static str, bytes: usize, source: sqlx::Error) -> Self {
        let broken = matches!(&source, sqlx::Error::Io(_))
            || matches!(&source, sqlx::Error::Database(d)
                if d.message().contains("max_allowed_packet") || d.code().as_deref() == Some("08S01"));
        if broken && bytes >= LARGE_STATEMENT {
            return EnqueueError::StatementTooLarge {
                type_tag,
                bytes,
                source,
            };
        }
        Self::from_database(type_tag, source)
    }

    pub(crate) fn from_database(type_tag: &'static str, source: sqlx::Error) -> Self {
        match Fault::of(&source) {
            Fault::NotMigrated(table) => EnqueueError::NotMigrated { table },
            Fault::Aborted => EnqueueError::TransactionAborted { type_tag, source },
            Fault::LockTimeout => EnqueueError::LockTimeout { type_tag, source },
            Fault::Other => EnqueueError::Database { type_tag, source },
        }
    }
}

/// The database that reported a driver error ("sqlite", "postgres" or "mysql"), for texts
/// that differ by database.
fn engine(e: &sqlx::Error) -> Option<&'static str> {
    let sqlx::Error::Database(_d) = e else {
        return None;
    };
    #[cfg(any(
        feature = "sqlx08",
        feature = "sea-orm",
        feature = "diesel-async",
        feature = "diesel-postgres",
        feature = "diesel-mysql",
        feature = "diesel-sqlite"
    ))]
    if let Some(e) = _d.try_downcast_ref::<crate::foreign_error::ForeignDatabaseError>() {
        return Some(e.engine);
    }
    #[cfg(feature = "sqlite")]
    if _d.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        return Some("sqlite");
    }
    #[cfg(feature = "postgres")]
    if _d
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
    {
        return Some("postgres");
    }
    #[cfg(feature = "mysql")]
    if _d
        .try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()
        .is_some()
    {
        return Some("mysql");
    }
    None
}

/// What became of the caller's transaction after the database aborted it.
fn after_abort(source: &sqlx::Error) -> &'static str {
    match engine(source) {
        Some("postgres") => {
            "PostgreSQL aborted the whole transaction, not even your own rows will be \
             written: its later statements fail (\"current transaction is aborted\") and \
             `commit()` rolls back although it returns Ok"
        }
        Some("mysql") => {
            "MariaDB/MySQL rolled the whole transaction back, not even your own rows will be \
             written; inside a transaction the outbox then opened a read-only one in its \
             place on this connection, so its later writes fail (\"Cannot execute statement \
             in a READ ONLY transaction\") and `commit()` writes nothing"
        }
        _ => "nothing of this transaction will be written, not even your own rows",
    }
}

/// Why an enqueue's lock wait timed out, and what became of the caller's transaction.
fn after_lock_timeout(source: &sqlx::Error) -> &'static str {
    match engine(source) {
        Some("postgres") => {
            "another open transaction most likely holds a message with the same idempotency \
             key (a second enqueue of a key waits until the first transaction ends); \
             PostgreSQL aborted the whole transaction, not even your own rows will be \
             written: its later statements fail (\"current transaction is aborted\") and \
             `commit()` rolls back although it returns Ok"
        }
        Some("mysql") => {
            "another open transaction most likely holds a message with the same idempotency \
             key (a second enqueue of a key waits until the first transaction ends); \
             MariaDB/MySQL undid only the statement, so inside a transaction the outbox \
             rolled the whole transaction back, your own rows with it, and opened a read-only \
             one in its place on this connection: its later writes fail (\"Cannot execute \
             statement in a READ ONLY transaction\") and `commit()` writes nothing"
        }
        Some("sqlite") => {
            "another connection held SQLite's only write lock until the busy timeout (for \
             example an open transaction holding a message with the same idempotency key), or \
             (code 517) wrote since this transaction read; SQLite keeps the transaction open, \
             so inside a transaction the outbox marked it: its `commit()` fails (\"FOREIGN KEY \
             constraint failed\", the outbox's marker) and writes nothing, even where later \
             statements succeed"
        }
        _ => {
            "another open transaction most likely holds a message with the same idempotency \
             key (a second enqueue of a key waits until the first transaction ends); nothing \
             of this transaction will be written, not even your own rows"
        }
    }
}

/// Payload bytes from which a connection that broke during an insert is blamed on the
/// statement's size.
const LARGE_STATEMENT: usize = 1024 * 1024;

/// What a database error means for the caller, across the three databases.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A table of the outbox (`outbox_…`) does not exist.
    NotMigrated(String),
    /// The database aborted the whole transaction: serialization failure or deadlock.
    Aborted,
    /// A lock wait ran into the database's timeout (or SQLite's busy timeout).
    LockTimeout,
    /// Anything else.
    Other,
}

impl Fault {
    /// True when an enqueue that failed this way has lost the caller's transaction: the
    /// database aborted it, or (a lock timeout) the outbox makes sure nothing of it commits.
    pub(crate) fn loses_transaction(&self) -> bool {
        matches!(self, Fault::Aborted | Fault::LockTimeout)
    }

    pub(crate) fn of(e: &sqlx::Error) -> Self {
        let sqlx::Error::Database(d) = e else {
            return Fault::Other;
        };
        let message = d.message();
        match d.code().as_deref() {
            // PostgreSQL serialization_failure / deadlock_detected; MySQL's deadlock (1213).
            Some("40001" | "40P01") => Fault::Aborted,
            // PostgreSQL lock_not_available (lock_timeout).
            Some("55P03") => Fault::LockTimeout,
            // MySQL 1205.
            Some("HY000") if message.contains("Lock wait timeout") => Fault::LockTimeout,
            // PostgreSQL undefined_table, MySQL 1146.
            Some("42P01" | "42S02") => {
                outbox_table(message).map_or(Fault::Other, Fault::NotMigrated)
            }
            // SQLite: SQLITE_ERROR with "no such table", SQLITE_BUSY (5, 517, …).
            _ if message.starts_with("no such table") => {
                outbox_table(message).map_or(Fault::Other, Fault::NotMigrated)
            }
            _ if message.contains("database is locked") => Fault::LockTimeout,
            _ => Fault::Other,
        }
    }
}

/// The last `outbox_…` name in a database message, if any (MySQL names the table as
/// `'database.table'`, and a database may be called `outbox_…` too).
fn outbox_table(message: &str) -> Option<String> {
    let start = message.rfind("outbox_")?;
    let name: String = message[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::outbox_table;

    #[test]
    fn table_names_are_read_from_each_databases_message() {
        assert_eq!(
            outbox_table("no such table: outbox_messages").as_deref(),
            Some("outbox_messages")
        );
        assert_eq!(
            outbox_table(r#"relation "outbox_messages" does not exist"#).as_deref(),
            Some("outbox_messages")
        );
        assert_eq!(
            outbox_table("Table 'outbox_app.outbox_dead_letters' doesn't exist").as_deref(),
            Some("outbox_dead_letters")
        );
        assert_eq!(outbox_table("no such table: users"), None);
    }
}

/// `Debug` of an error type that prints its `Display` text, the way `anyhow` does: a
/// `fn main() -> Result<(), outbox::Error>` that fails shows the message that says what to
/// do (`Error: the outbox table … call outbox.migrate() at start-up`), not the variant's
/// fields.
#[macro_export]
#[doc(hidden)]
macro_rules! __debug_as_display {
    ($($ty:ty),* $(,)?) => {$(
        impl ::std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(self, f)
            }
        }
    )*};
}

__debug_as_display!(EnqueueError, Error);

/// Whether `error` says the database could not be reached (the connection failed, broke or
/// could not be had), rather than that it answered (with rows or a refusal).
pub(crate) fn connection_failed(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
    )
}
