//! The storage port, written once for every SQL database, over a small [`Dialect`] each
//! database implements.
//!
//! A dialect knows how to run one statement with [`Arg`]uments (on its pool or in a write
//! transaction), how to read a column of a returned row ([`SqlRow`]), which statement texts
//! it uses ([`Queries`], from its `.sql` files), how it claims (that differs: `UPDATE …
//! RETURNING` or a locking read), and which clock it works on. Everything else — which
//! statements a verb runs in which transaction, with which parameters, and how rows become
//! port records — is plain code here and in [`rows`].
//!
//! Every statement takes its parameters in one canonical order, each parameter once (a
//! database that needs a value twice reads it from a one-row derived table); batches travel
//! as one JSON parameter, so every statement is static whatever the batch size. `now` is
//! bound as a nullable value: NULL makes the statement read the database's own clock.

mod breakers;
pub(crate) mod enqueue;
pub(crate) mod rows;
mod shaping;
pub(crate) mod suppressions;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    time::{Duration, SystemTime},
};

use futures::future::BoxFuture;

use self::rows::{
    beat_json, claims_json, filter_args, fold_counts, json, live_batch_args, live_filter_args,
    millis_ceil, SettlementGroups,
};
use crate::{
    clock::{unix_millis, Now},
    error::Error,
    store::{
        BucketState, CancelledGroup, ClaimRequest, Claimed, DeadLetter, DeadLetterFilter,
        DeadLetterStore, Fenced, GroupHook, GroupProgress, GroupStore, LiveFilter, LiveMessage,
        LiveMessageDetail, LiveMessageStore, LiveState, MinuteOutcomes, PauseStore, PausedType,
        QueueStore, RateBucketStore, RateLimit, Requeued, Settle, Settled, Settlement, StatsStore,
        Steering, TokenGrant, TypeCounts, TypeOutcomes, UnregisteredType, Waiting, WorkerBeat,
        WorkersSeen,
    },
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

/// The statement texts of one database (its `.sql` files), by what they do. A verb whose
/// move takes several statements lists them in the order they run in one transaction.
#[derive(Debug)]
pub struct Queries {
    /// Grouped delivered messages counted in their groups' rows (settlement, before the
    /// delete or keep).
    pub settle_count_delivered: &'static str,
    /// Delivered messages deleted (settlement).
    pub settle_delete: &'static str,
    /// Delivered messages kept as done rows (settlement).
    pub settle_done: &'static str,
    /// Messages back in the queue, due later (settlement).
    pub settle_retry: &'static str,
    /// Messages a suppression stopped, kept as suppressed rows (settlement).
    pub settle_suppressed: &'static str,
    /// Messages back in the queue unchanged (settlement).
    pub settle_release: &'static str,
    /// Messages moved to the dead letters (settlement); the last decides the count (it
    /// removes them from the queue).
    pub settle_bury: &'static [&'static str],
    /// Which of a batch's claims are still leased to the settling worker, locked until
    /// the transaction ends (only when a batch was partly fenced).
    pub settle_owned: &'static str,
    /// Where a batch's messages are now (id, claims, status, last error), read back after
    /// a settlement commit went unanswered.
    pub settle_read_back: &'static str,
    /// Registry row of a worker.
    pub worker_heartbeat: &'static str,
    /// Removes a worker from the registry.
    pub worker_delete: &'static str,
    /// Extends the leases a worker holds.
    pub extend_leases: &'static str,
    /// Requeues messages whose lease expired.
    pub rescue_expired: &'static str,
    /// Which types have a due message.
    pub due_types: &'static str,
    /// Deletes old done rows.
    pub prune_done: &'static str,
    /// Whether a drain has anything left.
    pub count_unfinished: &'static str,
    /// Queued messages of unregistered types, per type.
    pub unregistered_pending: &'static str,
    /// Moves queued messages of unregistered types to the dead letters; the first decides
    /// the count.
    pub unregistered_bury: &'static [&'static str],
    /// Takes a token.
    pub bucket_take: &'static str,
    /// Creates or changes a bucket.
    pub bucket_set: &'static str,
    /// One bucket.
    pub bucket_get: &'static str,
    /// Every bucket.
    pub bucket_list: &'static str,
    /// Pauses a type.
    pub pause: &'static str,
    /// Resumes a type.
    pub resume: &'static str,
    /// Every paused type.
    pub paused: &'static str,
    /// A page of dead letters.
    pub dead_letters_list: &'static str,
    /// How many dead letters match.
    pub dead_letters_count: &'static str,
    /// Deletes matching dead letters.
    pub dead_letters_purge: &'static str,
    /// Moves matching dead letters back to the queue; the last decides the count.
    pub requeue: &'static [&'static str],
    /// Counts per type and state.
    pub status_counts: &'static str,
    /// A keyset page of live messages.
    pub live_list: &'static str,
    /// How many live messages match.
    pub live_count: &'static str,
    /// A keyset page of live messages to one recipient (through its index).
    pub live_list_by_recipient: &'static str,
    /// How many live messages to one recipient match (through its index).
    pub live_count_by_recipient: &'static str,
    /// Makes a batch of matching queued messages due now.
    pub live_retry_now: &'static str,
    /// A batch of matching queued messages to cancel, with their groups, locked.
    pub live_cancel_select: &'static str,
    /// A batch of a group's queued messages to cancel, locked.
    pub group_cancel_select: &'static str,
    /// Records a group's cancel time (`group_cancel_mark.sql`).
    pub group_cancel_mark: &'static str,
    /// Deletes the messages a cancel selected.
    pub cancel_delete: &'static str,
    /// Adds cancelled messages to their groups' counts.
    pub groups_cancelled: &'static str,
    /// Pauses a group.
    pub group_pause: &'static str,
    /// Resumes a group.
    pub group_resume: &'static str,
    /// The paused groups.
    pub paused_groups: &'static str,
    /// One group's progress.
    pub group_show: &'static str,
    /// Every group's progress.
    pub groups_list: &'static str,
    /// Sets a group's completion hook.
    pub group_hook_set: &'static str,
    /// The groups whose hook is due.
    pub groups_finished: &'static str,
    /// Marks a group's hook fired (once).
    pub group_complete: &'static str,
    /// Enqueues a group's hook message.
    pub group_hook_enqueue: &'static str,
    /// Adds outcomes to the current minute's history rows.
    pub stats_add: &'static str,
    /// Deletes old history rows.
    pub stats_prune: &'static str,
    /// History rows from a minute on.
    pub stats_list: &'static str,
    /// The newest worker heartbeat, and now.
    pub workers_seen: &'static str,
    /// Creates a breaker's row, closed, unless it exists.
    pub breaker_insert: &'static str,
    /// Opens a closed breaker.
    pub breaker_open: &'static str,
    /// Gives an open breaker's due probe to one owner.
    pub breaker_take_probe: &'static str,
    /// The probe just taken: failed probes so far, time since the last WARN.
    pub breaker_probe_grant: &'static str,
    /// Records a failed probe and when the next is due.
    pub breaker_probe_failed: &'static str,
    /// Closes an open breaker.
    pub breaker_close: &'static str,
    /// Makes an open breaker's next probe due now.
    pub breaker_probe_now: &'static str,
    /// Every breaker.
    pub breakers_list: &'static str,
    /// The paused types and groups and the open breakers, in one read.
    pub steering: &'static str,
    /// Adds or replaces suppressions.
    pub suppression_add: &'static str,
    /// Removes one suppression.
    pub suppression_remove: &'static str,
    /// A page of suppressions.
    pub suppressions_list: &'static str,
    /// How many suppressions match.
    pub suppressions_count: &'static str,
    /// The suppressions that stop probed messages.
    pub suppression_check: &'static str,
    /// The messages kept as suppressed.
    pub suppressed_list: &'static str,
    /// Old suppressed rows with their groups, locked.
    pub prune_suppressed_select: &'static str,
    /// Deletes suppressed rows by id.
    pub prune_suppressed_delete: &'static str,
    /// Adds pruned suppressed messages to their groups' counts.
    pub groups_suppressed: &'static str,
    /// Records a single-use token unless it was used.
    pub token_use: &'static str,
    /// Which of a batch of tokens were used before (locked where the database can).
    pub tokens_used: &'static str,
    /// Records a batch of single-use tokens, leaving those used before.
    pub tokens_use: &'static str,
    /// Entries whose address holds a non-ASCII character, in key order.
    pub suppressions_unnormalized: &'static str,
    /// Writes one entry as it was unless its address and scope exist.
    pub suppression_keep: &'static str,
    /// Forgets old used tokens of one kind.
    pub tokens_forget: &'static str,
    /// Run first in the transactions of a site's grant and release, or empty: shaping
    /// state is soft (a lost slot frees itself after its lease), so PostgreSQL commits it
    /// without waiting for the WAL flush.
    pub site_soft_commit: &'static str,
    /// Gives a site a token back.
    pub site_refund: &'static str,
    /// The sites with limits or actions in force.
    pub sites_in_force: &'static str,
    /// Forgets rule-created sites idle for a day.
    pub sites_prune: &'static str,
    /// Forgets rule matches older than a year.
    pub site_hits_prune: &'static str,
    /// Writes a configured site's limits.
    pub site_configure: &'static str,
    /// Drops every site's configured limits.
    pub sites_unconfigure: &'static str,
    /// One site's row, locked.
    pub site_lock: &'static str,
    /// A site's messages in flight.
    pub site_slots_count: &'static str,
    /// A site's tokens after a grant.
    pub site_spend: &'static str,
    /// Takes a slot of a site.
    pub site_slot_take: &'static str,
    /// Frees a slot of a site.
    pub site_slot_release: &'static str,
    /// Every site with its live slots.
    pub sites_list: &'static str,
    /// A row for a site a rule acts on.
    pub site_ensure: &'static str,
    /// A rule slows a site.
    pub site_slow: &'static str,
    /// A rule suspends a site.
    pub site_suspend: &'static str,
    /// Ends a site's slowdown and suspension.
    pub site_resume: &'static str,
    /// Records a rule's match.
    pub site_hit: &'static str,
    /// Forgets a rule's old matches.
    pub site_hits_forget: &'static str,
    /// Counts a rule's recent matches.
    pub site_hits_count: &'static str,
    /// Adds or replaces a shaping rule.
    pub rule_put: &'static str,
    /// Removes a shaping rule.
    pub rule_remove: &'static str,
    /// Every shaping rule.
    pub rules_list: &'static str,
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

    /// Claims as [`QueueStore::claim`] says (any order; the store sorts).
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

/// The statements that apply `groups` (settlements by kind) for `owner` at `now`, each
/// with its parameters, and which statement of each kind counts how many of it applied.
struct SettleStatements<'a> {
    /// The grouped deliveries' count statement, which runs first and counts nothing.
    prelude: Option<(&'static str, [Arg<'a>; 3])>,
    args: Vec<(&'static [&'static str], [Arg<'a>; 3])>,
}

impl<'a> SettleStatements<'a> {
    fn new(
        q: &'static Queries,
        groups: &'a SettlementGroups,
        owner: &'a str,
        now: Option<i64>,
    ) -> Self {
        let kinds: [(&Option<String>, &'static [&'static str]); 6] = [
            (&groups.delete, std::slice::from_ref(&q.settle_delete)),
            (&groups.done, std::slice::from_ref(&q.settle_done)),
            (&groups.retry, std::slice::from_ref(&q.settle_retry)),
            (&groups.release, std::slice::from_ref(&q.settle_release)),
            (&groups.bury, q.settle_bury),
            (
                &groups.suppressed,
                std::slice::from_ref(&q.settle_suppressed),
            ),
        ];
        let args = kinds
            .into_iter()
            .filter_map(|(rows, sqls)| {
                let rows = rows.as_deref()?;
                Some((sqls, [Arg::Text(owner), Arg::OptInt(now), Arg::Text(rows)]))
            })
            .collect();
        let prelude = groups.grouped_delivered.as_deref().map(|rows| {
            let args = [Arg::Text(owner), Arg::OptInt(now), Arg::Text(rows)];
            (q.settle_count_delivered, args)
        });
        Self { prelude, args }
    }

    /// The statements in the order they run, and the index of each kind's counting one
    /// (its last: a bury's copy may count a replaced dead letter twice on MariaDB, its
    /// delete counts each message once).
    fn statements(&self) -> (Vec<Statement<'_>>, Vec<usize>) {
        let mut statements = Vec::new();
        let mut counted = Vec::new();
        if let Some((sql, args)) = &self.prelude {
            statements.push((*sql, &args[..]));
        }
        for (sqls, args) in &self.args {
            statements.extend(sqls.iter().map(|sql| (*sql, &args[..])));
            counted.push(statements.len() - 1);
        }
        (statements, counted)
    }
}

/// A bucket from the columns of `bucket_get.sql` starting at `at`: capacity, refill per
/// second, tokens, updated at, read at (unix seconds).
fn bucket_state<R: SqlRow>(row: &R, at: usize) -> Result<BucketState, sqlx::Error> {
    Ok(BucketState {
        limit: RateLimit {
            burst: row.real(at)?,
            per_second: row.real(at + 1)?,
        },
        tokens: row.real(at + 2)?,
        updated_at: from_unix_secs(row.real(at + 3)?),
        read_at: from_unix_secs(row.real(at + 4)?),
    })
}

impl<D: Dialect> QueueStore for D {
    fn claim<'a>(
        &'a self,
        request: &'a ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Claimed>, Error>> {
        Box::pin(async move {
            let mut claimed = self.claim_rows(request).await?;
            claimed.sort_by(Claimed::claim_order);
            Ok(claimed)
        })
    }

    fn settle<'a>(
        &'a self,
        owner: &'a str,
        settlements: &'a [Settlement],
        now: Now,
    ) -> BoxFuture<'a, Result<Settled, Error>> {
        Box::pin(async move {
            if settlements.is_empty() {
                return Ok(Settled::default());
            }
            let q = self.queries();
            let now = self.now_ms(now);
            // Fast path: every settlement applies (the counts say so) and is committed.
            let groups = SettlementGroups::of(settlements)?;
            let plan = SettleStatements::new(q, &groups, owner, now);
            let (statements, counted) = plan.statements();
            let all = settlements.len() as u64;
            let every_one =
                |changed: &[u64]| counted.iter().map(|&i| changed[i]).sum::<u64>() == all;
            if write_if(self, &statements, every_one).await?.is_some() {
                return Ok(Settled {
                    applied: all,
                    fenced: Vec::new(),
                });
            }
            // Some were fenced (rare): that transaction was rolled back. In a new one, lock
            // the claims still leased to `owner` and apply the settlements of those only.
            let claims = claims_json(settlements)?;
            let owned_args = &[Arg::Text(owner), Arg::Text(&claims)];
            transient_retries::<Self, _, _, _>(|| async move {
                let mut tx = self.begin_write().await?;
                let rows = self
                    .fetch(Some(&mut tx), q.settle_owned, owned_args)
                    .await?;
                let mut owned = HashSet::with_capacity(rows.len());
                for row in &rows {
                    let claim = u32::try_from(row.int(1)?).unwrap_or(u32::MAX);
                    owned.insert((row.text(0)?, claim));
                }
                let (applies, fenced): (Vec<&Settlement>, Vec<&Settlement>) = settlements
                    .iter()
                    .partition(|s| owned.contains(&(s.id.as_str().to_owned(), s.claim)));
                if !applies.is_empty() {
                    let groups = SettlementGroups::of(applies.iter().copied())?;
                    let plan = SettleStatements::new(q, &groups, owner, now);
                    for (sql, args) in plan.statements().0 {
                        self.execute(Some(&mut tx), sql, args).await?;
                    }
                }
                Self::commit(tx).await?;
                Ok(Settled {
                    applied: applies.len() as u64,
                    fenced: fenced.into_iter().map(Fenced::of).collect(),
                })
            })
            .await
        })
    }

    fn applied_before<'a>(
        &'a self,
        settlements: &'a [Settlement],
    ) -> BoxFuture<'a, Result<Vec<Fenced>, Error>> {
        Box::pin(async move {
            if settlements.is_empty() {
                return Ok(Vec::new());
            }
            let claims = claims_json(settlements)?;
            let rows = self
                .fetch(None, self.queries().settle_read_back, &[Arg::Text(&claims)])
                .await?;
            let mut now_at: HashMap<String, (i64, String, Option<String>)> = HashMap::new();
            for row in &rows {
                now_at.insert(row.text(0)?, (row.int(1)?, row.text(2)?, row.opt_text(3)?));
            }
            let applied = settlements.iter().filter(|s| {
                let Some((claims, status, last_error)) = now_at.get(s.id.as_str()) else {
                    // Gone from the queue: deleted as delivered, or moved to the dead letters.
                    return matches!(
                        s.settle,
                        Settle::Done { keep: false, .. } | Settle::Bury { .. }
                    );
                };
                // Claimed again since: not this settlement's doing.
                if *claims != i64::from(s.claim) {
                    return false;
                }
                match &s.settle {
                    Settle::Done { keep: true, .. } => status == "done",
                    Settle::Suppressed { .. } => status == "suppressed",
                    // A rescue also puts it back (with its own error text).
                    Settle::Retry { error, .. } => {
                        status == "queued" && last_error.as_deref() == Some(error.as_str())
                    }
                    Settle::Release => status == "queued",
                    Settle::Done { keep: false, .. } | Settle::Bury { .. } => false,
                }
            });
            Ok(applied.map(Fenced::of).collect())
        })
    }

    fn heartbeat<'a>(
        &'a self,
        beats: &'a [WorkerBeat<'a>],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            if beats.is_empty() {
                return Ok(());
            }
            let q = self.queries();
            let now = self.now_ms(now);
            let (workers, leases) = beat_json(beats)?;
            // The registry is for operators; the leases come first.
            let args = [Arg::OptInt(now), Arg::Text(&workers)];
            let registered = self.execute(None, q.worker_heartbeat, &args).await;
            if let Some(leases) = leases {
                let args = [Arg::OptInt(now), Arg::Text(&leases)];
                write(self, &[(q.extend_leases, &args)]).await?;
            }
            registered.map(drop).map_err(Error::from)
        })
    }

    fn deregister<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let args = [Arg::Text(owner)];
            self.execute(None, self.queries().worker_delete, &args)
                .await?;
            Ok(())
        })
    }

    fn rescue_expired<'a>(
        &'a self,
        type_tags: &'a [&'a str],
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            if type_tags.is_empty() {
                return Ok(0);
            }
            let tags = json(type_tags)?;
            let args = [Arg::Text(&tags), Arg::OptInt(self.now_ms(now))];
            let changed = write(self, &[(self.queries().rescue_expired, &args)]).await?;
            Ok(changed[0])
        })
    }

    fn due_types<'a>(
        &'a self,
        type_tags: &'a [&'a str],
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<String>, Error>> {
        Box::pin(async move {
            if type_tags.is_empty() {
                return Ok(Vec::new());
            }
            let tags = json(type_tags)?;
            let args = [Arg::Text(&tags), Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().due_types, &args).await?;
            let due = rows.iter().map(|r| r.text(0));
            Ok(due.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn prune_done(
        &self,
        window: Duration,
        now: Now,
        limit: u32,
    ) -> BoxFuture<'_, Result<u64, Error>> {
        Box::pin(async move {
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::Int(millis_ceil(window)),
                Arg::Int(i64::from(limit)),
            ];
            Ok(self.execute(None, self.queries().prune_done, &args).await?)
        })
    }

    fn count_unfinished<'a>(
        &'a self,
        type_tags: &'a [&'static str],
        owner_prefix: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let tags = json(type_tags)?;
            let args = [
                Arg::Text(&tags),
                Arg::Text(owner_prefix),
                Arg::OptInt(self.now_ms(now)),
            ];
            let rows = self
                .fetch(None, self.queries().count_unfinished, &args)
                .await?;
            Ok(rows::count(&rows)?)
        })
    }

    fn unregistered_pending<'a>(
        &'a self,
        registered: &'a [&'static str],
    ) -> BoxFuture<'a, Result<Vec<UnregisteredType>, Error>> {
        Box::pin(async move {
            let tags = json(registered)?;
            let args = [Arg::Text(&tags)];
            let rows = self
                .fetch(None, self.queries().unregistered_pending, &args)
                .await?;
            let found = rows.iter().map(|r| {
                Ok(UnregisteredType {
                    type_tag: r.text(0)?,
                    pending: r.int(1)?.max(0) as u64,
                })
            });
            Ok(found.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn bury_unregistered<'a>(
        &'a self,
        registered: &'a [&'static str],
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let tags = json(registered)?;
            let args = [
                Arg::Text(&tags),
                Arg::Text(reason),
                Arg::OptInt(self.now_ms(now)),
            ];
            let statements: Vec<Statement<'_>> = self
                .queries()
                .unregistered_bury
                .iter()
                .map(|sql| (*sql, &args[..]))
                .collect();
            let changed = write(self, &statements).await?;
            Ok(changed.first().copied().unwrap_or_default())
        })
    }
}

impl<D: Dialect> RateBucketStore for D {
    fn take_token<'a>(
        &'a self,
        bucket: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<TokenGrant, Error>> {
        Box::pin(async move {
            let args = D::take_token_args(self.now_secs(now), bucket);
            let taken = self
                .execute(None, self.queries().bucket_take, &args)
                .await?;
            if taken == 1 {
                return Ok(TokenGrant::Granted);
            }
            Ok(match self.bucket(bucket, now).await? {
                None => TokenGrant::NoSuchBucket,
                Some(state) => TokenGrant::Wait(state.wait_for_token()),
            })
        })
    }

    fn set_bucket<'a>(
        &'a self,
        bucket: &'a str,
        limit: RateLimit,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(bucket),
                Arg::Real(limit.burst),
                Arg::Real(limit.per_second),
                Arg::OptReal(self.now_secs(now)),
            ];
            write(self, &[(self.queries().bucket_set, &args)]).await?;
            Ok(())
        })
    }

    fn bucket<'a>(
        &'a self,
        bucket: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<BucketState>, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(bucket), Arg::OptReal(self.now_secs(now))];
            let rows = self.fetch(None, self.queries().bucket_get, &args).await?;
            Ok(rows.first().map(|r| bucket_state(r, 0)).transpose()?)
        })
    }

    fn buckets(&self, now: Now) -> BoxFuture<'_, Result<Vec<(String, BucketState)>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptReal(self.now_secs(now))];
            let rows = self.fetch(None, self.queries().bucket_list, &args).await?;
            let buckets = rows.iter().map(|r| Ok((r.text(0)?, bucket_state(r, 1)?)));
            Ok(buckets.collect::<Result<_, sqlx::Error>>()?)
        })
    }
}

/// Pauses `name` (a type or a group, by `sql`) at `now` with `reason`.
async fn pause_row<D: Dialect>(
    db: &D,
    sql: &'static str,
    name: &str,
    reason: &str,
    now: Now,
) -> Result<(), Error> {
    let args = [
        Arg::Text(name),
        Arg::OptInt(db.now_ms(now)),
        Arg::Text(reason),
    ];
    write(db, &[(sql, &args)]).await?;
    Ok(())
}

/// Resumes `name` (a type or a group, by `sql`); false if it was not paused.
async fn resume_row<D: Dialect>(db: &D, sql: &'static str, name: &str) -> Result<bool, Error> {
    let args = [Arg::Text(name)];
    let changed = write(db, &[(sql, &args)]).await?;
    Ok(changed[0] > 0)
}

impl<D: Dialect> PauseStore for D {
    fn pause<'a>(
        &'a self,
        type_tag: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(pause_row(self, self.queries().pause, type_tag, reason, now))
    }

    fn resume<'a>(&'a self, type_tag: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(resume_row(self, self.queries().resume, type_tag))
    }

    fn steering(&self, now: Now) -> BoxFuture<'_, Result<Steering, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().steering, &args).await?;
            let mut steering = Steering::default();
            for r in &rows {
                match r.int(0)? {
                    0 => steering.paused_types.push(PausedType {
                        type_tag: r.text(1)?,
                        paused_at: crate::clock::from_unix_millis(r.int(2)?),
                        reason: r.text(3)?,
                    }),
                    1 => steering.paused_groups.push(r.text(1)?),
                    3 => steering.cancelled_groups.push(CancelledGroup {
                        name: r.text(1)?,
                        cancelled_at: crate::clock::from_unix_millis(r.int(2)?),
                    }),
                    _ => steering.open_breakers.push(breakers::breaker_state(r, 1)?),
                }
            }
            Ok(steering)
        })
    }

    fn paused(&self) -> BoxFuture<'_, Result<Vec<PausedType>, Error>> {
        Box::pin(async move {
            let rows = self.fetch(None, self.queries().paused, &[]).await?;
            let paused = rows.iter().map(|r| {
                Ok(PausedType {
                    type_tag: r.text(0)?,
                    paused_at: crate::clock::from_unix_millis(r.int(1)?),
                    reason: r.text(2)?,
                })
            });
            Ok(paused.collect::<Result<_, sqlx::Error>>()?)
        })
    }
}

impl<D: Dialect> DeadLetterStore for D {
    fn list_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        limit: u32,
        offset: u64,
    ) -> BoxFuture<'a, Result<Vec<DeadLetter>, Error>> {
        Box::pin(async move {
            let [id, type_tag, before, recipient] = filter_args(filter);
            let offset = i64::try_from(offset).unwrap_or(i64::MAX);
            let args = [
                id,
                type_tag,
                before,
                recipient,
                Arg::Int(i64::from(limit)),
                Arg::Int(offset),
            ];
            let rows = self
                .fetch(None, self.queries().dead_letters_list, &args)
                .await?;
            let letters = rows.iter().map(rows::dead_letter);
            Ok(letters.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn count_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = filter_args(filter);
            let rows = self
                .fetch(None, self.queries().dead_letters_count, &args)
                .await?;
            Ok(rows::count(&rows)?)
        })
    }

    fn requeue_dead<'a>(
        &'a self,
        filter: &'a DeadLetterFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<Requeued, Error>> {
        Box::pin(async move {
            let [id, type_tag, before, recipient] = filter_args(filter);
            let args = [
                Arg::OptInt(self.now_ms(now)),
                id,
                type_tag,
                before,
                recipient,
            ];
            let statements: Vec<Statement<'_>> = self
                .queries()
                .requeue
                .iter()
                .map(|sql| (*sql, &args[..]))
                .collect();
            // The last statement removes the dead letters now in the queue: its count is
            // what this call moved.
            let changed = write(self, &statements).await?;
            let left = self.count_dead(filter).await?;
            Ok(Requeued {
                requeued: changed.last().copied().unwrap_or_default(),
                key_taken: left,
            })
        })
    }

    fn purge_dead<'a>(&'a self, filter: &'a DeadLetterFilter) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = filter_args(filter);
            let changed = write(self, &[(self.queries().dead_letters_purge, &args)]).await?;
            Ok(changed[0])
        })
    }
}

impl<D: Dialect> LiveMessageStore for D {
    fn list_live<'a>(
        &'a self,
        filter: &'a LiveFilter,
        after: Option<&'a str>,
        limit: u32,
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<LiveMessage>, Error>> {
        Box::pin(async move {
            let [now, id, type_tag, state, prefix, error, group, recipient] =
                live_filter_args(filter, self.now_ms(now));
            let args = [
                now,
                id,
                type_tag,
                state,
                prefix,
                error,
                group,
                recipient,
                Arg::OptText(after),
                Arg::Int(0),
                Arg::Int(i64::from(limit)),
            ];
            let q = self.queries();
            let statement = match filter.recipient {
                Some(_) => q.live_list_by_recipient,
                None => q.live_list,
            };
            let rows = self.fetch(None, statement, &args).await?;
            let messages = rows.iter().map(rows::live_message);
            Ok(messages.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn count_live<'a>(
        &'a self,
        filter: &'a LiveFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = live_filter_args(filter, self.now_ms(now));
            let q = self.queries();
            let statement = match filter.recipient {
                Some(_) => q.live_count_by_recipient,
                None => q.live_count,
            };
            let rows = self.fetch(None, statement, &args).await?;
            Ok(rows::count(&rows)?)
        })
    }

    fn oldest_queued_payloads<'a>(
        &'a self,
        type_tag: &'a str,
        limit: u32,
        now: Now,
    ) -> BoxFuture<'a, Result<Vec<Waiting>, Error>> {
        Box::pin(async move {
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::OptText(None),
                Arg::OptText(Some(type_tag)),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::Int(1),
                Arg::Int(i64::from(limit)),
            ];
            let rows = self.fetch(None, self.queries().live_list, &args).await?;
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                let message = rows::live_message(row)?;
                if message.state != LiveState::Running {
                    out.push((message.id, row.bytes(rows::LIVE_PAYLOAD)?));
                }
            }
            Ok(out)
        })
    }

    fn show_live<'a>(
        &'a self,
        id: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<LiveMessageDetail>, Error>> {
        Box::pin(async move {
            let args = [
                Arg::OptInt(self.now_ms(now)),
                Arg::OptText(Some(id)),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::OptText(None),
                Arg::Int(1),
                Arg::Int(1),
            ];
            let rows = self.fetch(None, self.queries().live_list, &args).await?;
            let Some(row) = rows.first() else {
                return Ok(None);
            };
            Ok(Some(LiveMessageDetail {
                message: rows::live_message(row)?,
                payload: row.bytes(rows::LIVE_PAYLOAD)?,
            }))
        })
    }

    fn retry_live_now<'a>(
        &'a self,
        filter: &'a LiveFilter,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = live_batch_args(filter, self.now_ms(now), batch);
            let mut total = 0;
            loop {
                let changed = write(self, &[(self.queries().live_retry_now, &args)]).await?[0];
                if changed == 0 {
                    return Ok(total);
                }
                total += changed;
            }
        })
    }

    fn cancel_live<'a>(
        &'a self,
        filter: &'a LiveFilter,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = live_batch_args(filter, self.now_ms(now), batch);
            cancel_batches(self, self.queries().live_cancel_select, &args).await
        })
    }
}

/// Cancels in batches: in one write transaction per batch, `select` (with `args`) reads
/// up to a batch of queued messages with their groups, locking them; they are deleted and
/// counted as cancelled in their groups' rows. Ends when a batch finds none; returns how
/// many it deleted in all. A large cancel never holds one long transaction, and messages
/// claimed meanwhile are left to finish.
async fn cancel_batches<D: Dialect>(
    db: &D,
    select: &'static str,
    args: &[Arg<'_>],
) -> Result<u64, Error> {
    let q = db.queries();
    let mut total = 0;
    loop {
        let deleted =
            delete_counting_groups(db, select, args, q.cancel_delete, q.groups_cancelled).await?;
        if deleted == 0 {
            return Ok(total);
        }
        total += deleted;
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

impl<D: Dialect> GroupStore for D {
    fn pause_group<'a>(
        &'a self,
        name: &'a str,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(pause_row(
            self,
            self.queries().group_pause,
            name,
            reason,
            now,
        ))
    }

    fn resume_group<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(resume_row(self, self.queries().group_resume, name))
    }

    fn paused_groups(&self) -> BoxFuture<'_, Result<Vec<String>, Error>> {
        Box::pin(async move {
            let rows = self.fetch(None, self.queries().paused_groups, &[]).await?;
            let names = rows.iter().map(|r| r.text(0));
            Ok(names.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn groups(&self, now: Now) -> BoxFuture<'_, Result<Vec<GroupProgress>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().groups_list, &args).await?;
            let groups = rows.iter().map(rows::group_progress);
            Ok(groups.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn group<'a>(
        &'a self,
        name: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<Option<GroupProgress>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now)), Arg::Text(name)];
            let rows = self.fetch(None, self.queries().group_show, &args).await?;
            Ok(rows.first().map(rows::group_progress).transpose()?)
        })
    }

    fn cancel_group<'a>(
        &'a self,
        name: &'a str,
        now: Now,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let mark = [Arg::Text(name), Arg::OptInt(self.now_ms(now))];
            write(self, &[(self.queries().group_cancel_mark, &mark)]).await?;
            self.cancel_group_leftovers(name, batch).await
        })
    }

    fn cancel_group_leftovers<'a>(
        &'a self,
        name: &'a str,
        batch: u32,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(name), Arg::Int(i64::from(batch.max(1)))];
            cancel_batches(self, self.queries().group_cancel_select, &args).await
        })
    }

    fn set_group_hook<'a>(
        &'a self,
        name: &'a str,
        hook: &'a GroupHook,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(name),
                Arg::Text(&hook.type_tag),
                Arg::Bytes(&hook.payload),
                Arg::Int(i64::from(hook.max_attempts)),
                Arg::Int(i64::from(hook.priority)),
            ];
            write(self, &[(self.queries().group_hook_set, &args)]).await?;
            Ok(())
        })
    }

    fn fire_group_hooks<'a>(
        &'a self,
        now: Now,
        new_id: &'a (dyn Fn() -> String + Send + Sync),
    ) -> BoxFuture<'a, Result<Vec<String>, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_ms(now);
            let rows = self.fetch(None, q.groups_finished, &[]).await?;
            let names = rows.iter().map(|r| r.text(0));
            let names: Vec<String> = names.collect::<Result<_, sqlx::Error>>()?;
            drop(rows);
            let mut fired = Vec::new();
            for name in names {
                let id = new_id();
                let mark = [Arg::Text(&name), Arg::OptInt(now)];
                let enqueue = [Arg::Text(&name), Arg::OptInt(now), Arg::Text(&id)];
                // Only the transaction that marks the hook fired enqueues its message.
                let statements = [
                    (q.group_complete, &mark[..]),
                    (q.group_hook_enqueue, &enqueue[..]),
                ];
                let kept = write_if(self, &statements, |changed| changed[0] == 1).await?;
                if kept.is_some() {
                    fired.push(name);
                }
            }
            Ok(fired)
        })
    }
}

impl<D: Dialect> StatsStore for D {
    fn status_counts(&self, now: Now) -> BoxFuture<'_, Result<Vec<TypeCounts>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self
                .fetch(None, self.queries().status_counts, &args)
                .await?;
            Ok(fold_counts(&rows)?)
        })
    }

    fn add_history<'a>(
        &'a self,
        outcomes: &'a [TypeOutcomes],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_ms(now);
            let rows: Vec<(&str, u64, u64, u64)> = outcomes
                .iter()
                .map(|o| (o.type_tag.as_str(), o.delivered, o.failed, o.dead))
                .collect();
            let rows = json(&rows)?;
            let add = [Arg::OptInt(now), Arg::Text(&rows)];
            let prune = [Arg::OptInt(now)];
            write(self, &[(q.stats_add, &add), (q.stats_prune, &prune)]).await?;
            Ok(())
        })
    }

    fn history(&self, since: SystemTime) -> BoxFuture<'_, Result<Vec<MinuteOutcomes>, Error>> {
        Box::pin(async move {
            let args = [Arg::Int(unix_millis(since))];
            let rows = self.fetch(None, self.queries().stats_list, &args).await?;
            let minutes = rows.iter().map(|r| {
                let n = |i| r.int(i).map(|v| v.max(0) as u64);
                Ok(MinuteOutcomes {
                    minute: crate::clock::from_unix_millis(r.int(0)?),
                    outcomes: TypeOutcomes {
                        type_tag: r.text(1)?,
                        delivered: n(2)?,
                        failed: n(3)?,
                        dead: n(4)?,
                    },
                })
            });
            Ok(minutes.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn workers_seen(&self, now: Now) -> BoxFuture<'_, Result<WorkersSeen, Error>> {
        Box::pin(async move {
            let args = [Arg::OptInt(self.now_ms(now))];
            let rows = self.fetch(None, self.queries().workers_seen, &args).await?;
            let row = rows
                .first()
                .ok_or_else(|| Error::Database(sqlx::Error::RowNotFound))?;
            Ok(WorkersSeen {
                last_seen: row.opt_int(0)?.map(crate::clock::from_unix_millis),
                now: crate::clock::from_unix_millis(row.int(1)?),
            })
        })
    }
}
