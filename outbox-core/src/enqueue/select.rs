//! Fan-out straight from the application's own rows: one `INSERT … SELECT` writes a
//! message per row of a query, in the caller's transaction, without the rows ever leaving
//! the database.

use std::time::Duration;

use super::{
    options::{KeyChoice, When},
    prepare::{check_group, MAX_ATTEMPTS_LIMIT, MAX_DELAY},
    EnqueueConnection, EnqueueOptions, InsertMessages, MessageId,
};
use crate::{clock::Due, error::EnqueueError, message::OutboxMessage};

/// One bound value of an application's `SELECT` ([`Select::bind`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SelectArg {
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// SQL NULL.
    Null,
}

impl From<i64> for SelectArg {
    fn from(v: i64) -> Self {
        SelectArg::Int(v)
    }
}

impl From<i32> for SelectArg {
    fn from(v: i32) -> Self {
        SelectArg::Int(i64::from(v))
    }
}

impl From<f64> for SelectArg {
    fn from(v: f64) -> Self {
        SelectArg::Real(v)
    }
}

impl From<&str> for SelectArg {
    fn from(v: &str) -> Self {
        SelectArg::Text(v.to_owned())
    }
}

impl From<String> for SelectArg {
    fn from(v: String) -> Self {
        SelectArg::Text(v)
    }
}

impl<T: Into<SelectArg>> From<Option<T>> for SelectArg {
    fn from(v: Option<T>) -> Self {
        v.map_or(SelectArg::Null, Into::into)
    }
}

/// The application's query whose rows become messages: a `SELECT` returning the columns
/// `payload` (the message as JSON text, e.g. built with `json_object(…)` /
/// `jsonb_build_object(…)` / `JSON_OBJECT(…)`) and `idempotency_key` (text, or NULL for
/// none), with its parameters in the database's own placeholder syntax (`?` on SQLite and
/// MariaDB/MySQL, `$1`, `$2`, … on PostgreSQL).
#[derive(Debug, Clone)]
pub struct Select<'q> {
    // Read by the database engines only: unread in a build without one.
    #[cfg_attr(
        not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
        allow(dead_code)
    )]
    pub(crate) sql: &'q str,
    pub(crate) args: Vec<SelectArg>,
}

impl<'q> Select<'q> {
    /// The query `sql`, without parameters yet.
    pub fn new(sql: &'q str) -> Self {
        Self {
            sql,
            args: Vec::new(),
        }
    }

    /// Binds the query's next parameter.
    pub fn bind(mut self, value: impl Into<SelectArg>) -> Self {
        self.args.push(value.into());
        self
    }
}

/// An `INSERT … SELECT` as a backend runs it: the application's query and the message
/// settings every row gets.
#[derive(Debug, Clone)]
pub struct SelectInsert<'q> {
    /// The application's query.
    pub select: &'q Select<'q>,
    /// The first 16 characters of every id this insert writes; each row's id ends with its
    /// row number as 10 digits, so the ids are valid, distinct ULIDs that sort in row order.
    pub id_prefix: String,
    /// The type tag.
    pub queue: &'static str,
    /// Attempts each message gets.
    pub max_attempts: u32,
    /// When they are due.
    pub due: Due,
    /// Their priority.
    pub priority: u16,
    /// Their group, if any.
    pub group: Option<String>,
}

impl SelectInsert<'_> {
    /// The smallest and largest id this insert can write.
    pub fn id_range(&self) -> (String, String) {
        (
            format!("{}0000000000", self.id_prefix),
            format!("{}9999999999", self.id_prefix),
        )
    }
}

/// What an `INSERT … SELECT` wrote: how many messages, and the payload of the first (the
/// one the enqueue decodes to check the query's shape).
#[derive(Debug, Clone, Default)]
pub struct SelectWritten {
    /// Messages written (rows whose idempotency key was taken are skipped).
    pub inserted: u64,
    /// The first written message's payload, if any was written.
    pub first_payload: Option<Vec<u8>>,
}

/// Enqueues one message of type `M` per row of `select`, in one `INSERT … SELECT` in the
/// caller's transaction: the rows never leave the database, so memory stays flat however
/// many there are. Every message gets `options`' due time, priority, attempts and group;
/// its payload and idempotency key come from the query's `payload` and `idempotency_key`
/// columns (a row whose key is taken is skipped, as a duplicate enqueue is). Returns how
/// many messages were written. Their ids, and so their order among messages of equal
/// priority and due time, follow the order the query returns its rows: its `ORDER BY` on
/// SQLite and PostgreSQL; MariaDB ignores an `ORDER BY` inside a subquery, so there the
/// order is the database's.
///
/// The payload is written as the query built it, so the first written message is read
/// back and decoded as `M` (and checked by [`OutboxMessage::validate`]): a query of the
/// wrong shape fails here with the reason, instead of every message failing at delivery
/// (roll the transaction back then). The other rows are not checked one by one, nor
/// against the type's payload limit.
///
/// ```no_run
/// # #[cfg(feature = "sqlite")]
/// # async fn demo(pool: sqlx::SqlitePool) -> Result<(), Box<dyn std::error::Error>> {
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Newsletter { email: String, issue: i64 }
/// # impl outbox_core::OutboxMessage for Newsletter { const TYPE: &'static str = "newsletter"; }
/// use outbox_core::{enqueue_select, EnqueueOptions, Select};
/// let mut tx = pool.begin().await?;
/// let query = Select::new(
///     "SELECT json_object('email', email, 'issue', ?) AS payload, \
///             'issue-7:' || id AS idempotency_key \
///      FROM subscribers WHERE confirmed",
/// )
/// .bind(7);
/// let written =
///     enqueue_select::<Newsletter, _>(&mut *tx, &query, EnqueueOptions::new().group("issue-7"))
///         .await?;
/// tx.commit().await?;
/// # let _ = written; Ok(()) }
/// ```
pub async fn enqueue_select<M: OutboxMessage, C: EnqueueConnection>(
    mut conn: C,
    select: &Select<'_>,
    options: EnqueueOptions,
) -> Result<u64, EnqueueError> {
    let insert = select_insert::<M>(select, &options)?;
    let written = conn
        .connection()
        .insert_select(&insert)
        .await
        .map_err(|source| EnqueueError::from_database(M::TYPE, source))?;
    if let Some(payload) = &written.first_payload {
        let message = crate::message::decode_payload::<M>(payload).map_err(|e| {
            EnqueueError::InvalidOption {
                type_tag: M::TYPE,
                option: "select",
                reason: format!(
                    "the query's `payload` column does not decode as `{}` ({e}): build it \
                     with the type's field names; roll the transaction back",
                    std::any::type_name::<M>()
                ),
            }
        })?;
        message
            .validate()
            .map_err(|source| EnqueueError::InvalidMessage {
                type_tag: M::TYPE,
                source,
            })?;
    }
    Ok(written.inserted)
}

/// Checks `options` for a select enqueue of `M` and reserves the insert's ids.
fn select_insert<'q, M: OutboxMessage>(
    select: &'q Select<'q>,
    options: &EnqueueOptions,
) -> Result<SelectInsert<'q>, EnqueueError> {
    crate::message::validate_type_tag(M::TYPE).map_err(|reason| EnqueueError::InvalidTypeTag {
        rust_type: std::any::type_name::<M>(),
        reason,
    })?;
    let invalid = |option: &'static str, reason: String| EnqueueError::InvalidOption {
        type_tag: M::TYPE,
        option,
        reason,
    };
    if !matches!(options.key, KeyChoice::FromMessage) {
        return Err(invalid(
            "idempotency_key",
            "a select enqueue takes each row's key from its `idempotency_key` column \
             (NULL for none); remove the option"
                .into(),
        ));
    }
    if options.order_key.is_some() {
        return Err(invalid(
            "order_key",
            "a select enqueue writes its rows without ordering keys (the query's rows carry \
             none); enqueue ordered messages with `enqueue_many_with`"
                .into(),
        ));
    }
    let max_attempts = options.max_attempts.unwrap_or(M::DEFAULTS.max_attempts);
    if !(1..=MAX_ATTEMPTS_LIMIT).contains(&max_attempts) {
        return Err(invalid(
            "max_attempts",
            format!("{max_attempts} is outside 1..={MAX_ATTEMPTS_LIMIT}"),
        ));
    }
    if let Some(group) = &options.group {
        check_group(group).map_err(|reason| invalid("group", reason))?;
    }
    let due = match options.when {
        None => Due::After(Duration::ZERO),
        Some(When::At(at)) => Due::At(at),
        Some(When::After(delay)) if delay > MAX_DELAY => {
            return Err(invalid(
                "after",
                format!("a delay of {delay:?} is longer than the longest one ({MAX_DELAY:?})"),
            ))
        }
        Some(When::After(delay)) => Due::After(delay),
    };
    Ok(SelectInsert {
        select,
        id_prefix: MessageId::reserve_block(),
        queue: M::TYPE,
        max_attempts,
        due,
        priority: options.priority.unwrap_or(M::DEFAULTS.priority),
        group: options.group.clone(),
    })
}
