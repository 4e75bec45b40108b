//! The storage port, written once for every SQL database, over a small [`Dialect`] each
//! database implements.
//!
//! A dialect knows how to run one statement with [`Arg`]uments (on its pool or in a write
//! transaction), how to read a column of a returned row ([`SqlRow`]), which statement texts
//! it uses ([`Queries`], from its `.sql` files), how it claims (that differs: `UPDATE …
//! RETURNING` or a locking read), and which clock it works on. Everything else — which
//! statements a verb runs in which transaction, with which parameters, and how rows become
//! port records — is plain code, one file per port area (`queue`, `buckets`, `pauses`,
//! `dead_letters`, `live`, `groups`, `stats`, `breakers`, `suppressions`, `shaping`,
//! `enqueue`), and in [`rows`]. This file holds what they share: parameters, rows, the
//! dialect, the write transactions and the time conversions; [`Queries`] is in `queries.rs`.
//!
//! Every statement takes its parameters in one canonical order, each parameter once (a
//! database that needs a value twice reads it from a one-row derived table); batches travel
//! as one JSON parameter, so every statement is static whatever the batch size. `now` is
//! bound as a nullable value: NULL makes the statement read the database's own clock.

mod breakers;
mod buckets;
mod dead_letters;
mod endpoints;
pub(crate) mod enqueue;
mod events;
mod groups;
mod inbox;
mod live;
mod pauses;
mod queries;
mod queue;
pub(crate) mod rows;
mod shaping;
mod stats;
pub(crate) mod suppressions;

use std::{
    collections::BTreeMap,
    time::{Duration, SystemTime},
};

use futures::future::BoxFuture;

pub use self::queries::Queries;
use self::rows::json;
use crate::{
    clock::{unix_millis, Now},
    error::Error,
    store::{ClaimRequest, Claimed},
};

/// How the pools the outbox opens log their statements: every statement at TRACE, and one
/// slower than a second at DEBUG, not sqlx's WARN — a claim or a settlement that waited for
/// a lock is the outbox's business, reported by its own logs and metrics, not a message for
/// the operator. (An application's own pool keeps its own settings: set
/// `.log_slow_statements(log::LevelFilter::Debug, …)` on its connect options to quiet it.)
pub(crate) fn quiet<O: sqlx::ConnectOptions>(options: O) -> O {
    options
        .log_statements(log::LevelFilter::Trace)
        .log_slow_statements(log::LevelFilter::Debug, Duration::from_secs(1))
}

/// Runs of a write transaction after a transient error (deadlock, serialization failure,
/// lock wait timeout) before the error is returned.
const WRITE_RETRIES: u32 = 8;

/// One bound parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    /// A 64-bit integer.
    Int(i64),
    /// A 64-bit integer or NULL.
    OptInt(Option<i64>),
    /// A double or NULL.
    OptReal(Option<f64>),
    /// A double.
    Real(f64),
    /// Text.
    Text(&'a str),
    /// Text or NULL.
    OptText(Option<&'a str>),
    /// Bytes.
    Bytes(&'a [u8]),
}

/// Binds `args` to `query` in order.
pub(crate) fn bind<'q, DB: sqlx::Database>(
    mut query: sqlx::query::Query<'q, DB, DB::Arguments>,
    args: &[Arg<'_>],
) -> sqlx::query::Query<'q, DB, DB::Arguments>
where
    for<'t> i64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> f64: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> &'t str: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> &'t [u8]: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> Option<i64>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> Option<f64>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    for<'t> Option<&'t str>: sqlx::Encode<'t, DB> + sqlx::Type<DB>,
{
    for arg in args {
        query = match *arg {
            Arg::Int(v) => query.bind(v),
            Arg::OptInt(v) => query.bind(v),
            Arg::Real(v) => query.bind(v),
            Arg::OptReal(v) => query.bind(v),
            Arg::Text(v) => query.bind(v),
            Arg::OptText(v) => query.bind(v),
            Arg::Bytes(v) => query.bind(v),
        };
    }
    query
}

/// Reading one column of a returned row, whatever integer width the database uses.
pub trait SqlRow: Send + 'static {
    /// An integer column.
    fn int(&self, i: usize) -> Result<i64, sqlx::Error>;
    /// An integer column that may be NULL.
    fn opt_int(&self, i: usize) -> Result<Option<i64>, sqlx::Error>;
    /// A floating-point column.
    fn real(&self, i: usize) -> Result<f64, sqlx::Error>;
    /// A floating-point column that may be NULL.
    fn opt_real(&self, i: usize) -> Result<Option<f64>, sqlx::Error>;
    /// A text column.
    fn text(&self, i: usize) -> Result<String, sqlx::Error>;
    /// A text column that may be NULL.
    fn opt_text(&self, i: usize) -> Result<Option<String>, sqlx::Error>;
    /// A bytes column.
    fn bytes(&self, i: usize) -> Result<Vec<u8>, sqlx::Error>;
}

/// The integer width a column declares, as far as its type says: 64, 32 or 16 bits.
fn declared_width<R>(row: &R, i: usize) -> Option<u8>
where
    R: sqlx::Row,
    usize: sqlx::ColumnIndex<R>,
    i64: sqlx::Type<R::Database>,
    i32: sqlx::Type<R::Database>,
    i16: sqlx::Type<R::Database>,
{
    use sqlx::{Column, Type};
    let ty = row.try_column(i).ok()?.type_info();
    if <i64 as Type<R::Database>>::compatible(ty) {
        Some(64)
    } else if <i32 as Type<R::Database>>::compatible(ty) {
        Some(32)
    } else if <i16 as Type<R::Database>>::compatible(ty) {
        Some(16)
    } else {
        None
    }
}

/// Every database's rows: an integer column is read at the width its type declares
/// (PostgreSQL and MySQL return the column's own width), else as `BIGINT`, else `INT`,
/// else `SMALLINT`. (The declared width comes first because a try at the wrong width
/// formats an error message: several per row of every claim, most of a claim's own cost.)
impl<R> SqlRow for R
where
    R: sqlx::Row + Send + 'static,
    usize: sqlx::ColumnIndex<R>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i32: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i16: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> f64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<f64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Vec<u8>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    fn int(&self, i: usize) -> Result<i64, sqlx::Error> {
        let declared = match declared_width(self, i) {
            Some(32) => self.try_get::<i32, _>(i).map(i64::from),
            Some(16) => self.try_get::<i16, _>(i).map(i64::from),
            _ => self.try_get::<i64, _>(i),
        };
        declared
            .or_else(|_| self.try_get::<i64, _>(i))
            .or_else(|_| self.try_get::<i32, _>(i).map(i64::from))
            .or_else(|_| self.try_get::<i16, _>(i).map(i64::from))
    }

    fn opt_int(&self, i: usize) -> Result<Option<i64>, sqlx::Error> {
        let declared = match declared_width(self, i) {
            Some(32) => self.try_get::<Option<i32>, _>(i).map(|v| v.map(i64::from)),
            Some(16) => self.try_get::<Option<i16>, _>(i).map(|v| v.map(i64::from)),
            _ => self.try_get::<Option<i64>, _>(i),
        };
        declared
            .or_else(|_| self.try_get::<Option<i64>, _>(i))
            .or_else(|_| self.try_get::<Option<i32>, _>(i).map(|v| v.map(i64::from)))
            .or_else(|_| self.try_get::<Option<i16>, _>(i).map(|v| v.map(i64::from)))
    }

    fn real(&self, i: usize) -> Result<f64, sqlx::Error> {
        self.try_get(i)
    }

    fn opt_real(&self, i: usize) -> Result<Option<f64>, sqlx::Error> {
        self.try_get(i)
    }

    fn text(&self, i: usize) -> Result<String, sqlx::Error> {
        self.try_get(i)
    }

    fn opt_text(&self, i: usize) -> Result<Option<String>, sqlx::Error> {
        self.try_get(i)
    }

    fn bytes(&self, i: usize) -> Result<Vec<u8>, sqlx::Error> {
        self.try_get(i)
    }
}

/// What a SQL database tells the shared store. Public only inside the crate's private
/// `backend::sql` module, so no one outside can implement it.
pub trait Dialect: Clone + Send + Sync + 'static {
    /// A returned row.
    type Row: SqlRow;
    /// A write transaction.
    type Tx: Send + 'static;

    /// The database's statement texts.
    fn queries(&self) -> &'static Queries;

    /// Whether the database reads its own clock for [`Now::Database`] (PostgreSQL,
    /// MariaDB); if not (SQLite, one host), the process clock is bound instead.
    fn database_clock(&self) -> bool;

    /// Starts a write transaction as the database wants it.
    fn begin_write(&self) -> BoxFuture<'_, Result<Self::Tx, sqlx::Error>>;

    /// Commits a write transaction.
    fn commit(tx: Self::Tx) -> BoxFuture<'static, Result<(), sqlx::Error>>;

    /// Rolls a write transaction back.
    fn rollback(tx: Self::Tx) -> BoxFuture<'static, Result<(), sqlx::Error>>;

    /// Runs `sql` with `args` in `tx`, or on the pool; returns the rows it changed.
    fn execute<'a>(
        &'a self,
        tx: Option<&'a mut Self::Tx>,
        sql: &'static str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>>;

    /// Runs `sql` with `args` in `tx`, or on the pool; returns its rows.
    fn fetch<'a>(
        &'a self,
        tx: Option<&'a mut Self::Tx>,
        sql: &'static str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<Vec<Self::Row>, sqlx::Error>>;

    /// Whether the transaction failed as a whole and may simply run again.
    fn is_transient(error: &sqlx::Error) -> bool;

    /// Claims as [`QueueStore::claim`](crate::store::QueueStore::claim) says (any order; the
    /// store sorts).
    fn claim_rows<'a>(
        &'a self,
        request: &'a ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Claimed>, sqlx::Error>>;

    /// The parameters of `bucket_take` (`now` in unix seconds, NULL for the database's
    /// clock): by default `now, bucket`.
    fn take_token_args(now: Option<f64>, bucket: &str) -> Vec<Arg<'_>> {
        vec![Arg::OptReal(now), Arg::Text(bucket)]
    }

    /// `now` as unix milliseconds to bind, or `None` for the database's clock.
    fn now_ms(&self, now: Now) -> Option<i64> {
        match now {
            Now::Database if self.database_clock() => None,
            other => Some(unix_millis(other.or_system())),
        }
    }

    /// `now` as unix seconds to bind (rate buckets), or `None` for the database's clock.
    fn now_secs(&self, now: Now) -> Option<f64> {
        match now {
            Now::Database if self.database_clock() => None,
            other => Some(unix_secs(other.or_system())),
        }
    }
}

/// Unix seconds of `t` with sub-second precision: the unit of the rate bucket columns.
fn unix_secs(t: SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// The time `secs` unix seconds stand for.
/// (clamped to the year 5000: a stored value past it cannot overflow the clock).
fn from_unix_secs(secs: f64) -> SystemTime {
    std::time::UNIX_EPOCH
        + Duration::try_from_secs_f64(secs.clamp(0.0, 95_617_584_000.0)).unwrap_or_default()
}

/// One statement of a write transaction and its parameters.
type Statement<'a> = (&'static str, &'a [Arg<'a>]);

/// Runs `statements` in order in one write transaction, again from the start after a
/// transient error (up to [`WRITE_RETRIES`] times); returns each statement's count of
/// changed rows. Every write of the port goes through it (or through
/// [`write_if`]).
async fn write<D: Dialect>(db: &D, statements: &[Statement<'_>]) -> Result<Vec<u64>, Error> {
    let changed = write_if(db, statements, |_| true).await?;
    Ok(changed.expect("always kept"))
}

/// Runs `statements` in order in one write transaction and commits it if `keep` accepts
/// their counts of changed rows (returned), else rolls it back (`None`); again from the
/// start after a transient error, as [`write`].
async fn write_if<D: Dialect>(
    db: &D,
    statements: &[Statement<'_>],
    keep: impl Fn(&[u64]) -> bool,
) -> Result<Option<Vec<u64>>, Error> {
    let keep = &keep;
    transient_retries::<D, _, _, _>(|| async move {
        let mut tx = db.begin_write().await?;
        let mut changed = Vec::with_capacity(statements.len());
        for (sql, args) in statements {
            changed.push(db.execute(Some(&mut tx), sql, args).await?);
        }
        if !keep(&changed) {
            D::rollback(tx).await?;
            return Ok(None);
        }
        D::commit(tx).await?;
        Ok(Some(changed))
    })
    .await
}

/// Runs the write transaction `run` starts, again from the start after a transient error
/// (up to [`WRITE_RETRIES`] times, with a short growing pause).
async fn transient_retries<D, T, F, Fut>(mut run: F) -> Result<T, Error>
where
    D: Dialect,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let mut attempt = 0u32;
    loop {
        match run().await {
            Err(e) if D::is_transient(&e) && attempt < WRITE_RETRIES => {
                attempt += 1;
                let jitter = u64::from(attempt * 7 % 11);
                let pause = 5 * u64::from(attempt) + jitter;
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            other => return other.map_err(Error::from),
        }
    }
}

/// One batch, in one write transaction: `select` (with `args`) reads message ids with their
/// groups, locking them; `delete` removes them (a JSON array of ids) and `count` adds how
/// many of each group went to the group's row (a JSON array of `[group, count]`). Returns
/// how many were deleted (0 when `select` found none).
pub(super) async fn delete_counting_groups<D: Dialect>(
    db: &D,
    select: &'static str,
    args: &[Arg<'_>],
    delete: &'static str,
    count: &'static str,
) -> Result<u64, Error> {
    transient_retries::<D, _, _, _>(|| async move {
        let mut tx = db.begin_write().await?;
        let rows = db.fetch(Some(&mut tx), select, args).await?;
        if rows.is_empty() {
            D::rollback(tx).await?;
            return Ok(0);
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut by_group: BTreeMap<String, u64> = BTreeMap::new();
        for row in &rows {
            ids.push(row.text(0)?);
            if let Some(group) = row.opt_text(1)? {
                *by_group.entry(group).or_default() += 1;
            }
        }
        let ids = json(&ids)?;
        let deleted = db
            .execute(Some(&mut tx), delete, &[Arg::Text(&ids)])
            .await?;
        if !by_group.is_empty() {
            let counts: Vec<(&String, u64)> = by_group.iter().map(|(g, n)| (g, *n)).collect();
            let counts = json(&counts)?;
            db.execute(Some(&mut tx), count, &[Arg::Text(&counts)])
                .await?;
        }
        D::commit(tx).await?;
        Ok(deleted)
    })
    .await
}
