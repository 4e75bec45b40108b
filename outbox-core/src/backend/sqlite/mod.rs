//! SQLite, the embedded default: one file, no server.
//!
//! The outbox's own engine: a claim is one `UPDATE … RETURNING` over the partial claim
//! index (SQLite has one writer, so claims never collide); settlements are written in
//! batches in one `BEGIN IMMEDIATE` transaction; a commit of an enqueue on a connection of
//! this process wakes the idle workers of its types at once, other processes' enqueues are
//! found by the process's due probe.
//!
//! Failure modes: SQLite allows one writer at a time. Every connection made by
//! [`connect`] waits up to 30 s for the write lock (`busy_timeout`); a claim that still
//! fails is retried after a pause, a settlement that cannot be written is kept and
//! retried, and a process that dies loses its leases, so its messages come back. An
//! enqueue that fails with SQLITE_BUSY inside a transaction marks the transaction, so that
//! its commit fails instead of writing the caller's rows without the message.
//!
//! Fairness: SQLite's busy handler is not a queue (a writer that has waited long polls
//! the lock ever more rarely), so the workers of one process take turns through a
//! first-come, first-served gate before they ask SQLite for the lock (`gate.rs`).

mod enqueue;
mod gate;

use std::{
    str::FromStr,
    sync::{Arc, OnceLock},
    time::Duration,
};

use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
    },
    SqlitePool,
};

use self::gate::{GatedTx, WriteGate};
use super::sql::{
    bind, quiet,
    rows::{claimed, millis_ceil},
    Arg, Dialect, Queries,
};
use super::{check_scheme, connect_error, Engine};
use crate::{
    error::Error,
    store::{Backend, ClaimRequest, Claimed, Wakeups},
};

use crate::backend::migrations;

/// The migration files of `migrations/sqlite/`, embedded by the build script.
const MIGRATIONS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations_sqlite.rs"));

/// The idle workers of every SQLite database in this process: a commit of an enqueue wakes
/// the workers of its types (a spurious wake-up for another file costs one claim query).
fn wakeups() -> Arc<Wakeups> {
    static WAKEUPS: OnceLock<Arc<Wakeups>> = OnceLock::new();
    Arc::clone(WAKEUPS.get_or_init(|| Arc::new(Wakeups::new())))
}

/// Connection options the outbox expects of a SQLite file: created if missing, WAL
/// journal, `synchronous = NORMAL` (durable across application crashes; a power loss may
/// lose the last commits), a 30 s busy timeout (several worker processes on one file
/// queue for the write lock; measured waits reach seconds) and foreign keys on; statements
/// logged at TRACE, and slow ones (a second) at DEBUG, not WARN.
///
/// Fails with [`Error::Connect`] when `url` is not a SQLite URL or path (a PostgreSQL or
/// MariaDB URL gets the name of the function that opens it) or is malformed.
pub fn connect_options(url: &str) -> Result<SqliteConnectOptions, Error> {
    check_scheme(Engine::Sqlite, url)?;
    let options =
        SqliteConnectOptions::from_str(url).map_err(|e| connect_error(Engine::Sqlite, url, e))?;
    Ok(quiet(options)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30))
        .foreign_keys(true))
}

/// Opens a pool on `url` (e.g. `sqlite://app.db`) with [`connect_options`]. Use the same
/// pool for the application's transactions and for the outbox.
///
/// Fails with [`Error::Connect`], saying what to do, when `url` is not a SQLite URL (a
/// PostgreSQL or MariaDB URL gets the name of the function that opens it) or the file
/// cannot be opened or created (its directory is missing or not writable).
pub async fn connect(url: &str) -> Result<SqlitePool, Error> {
    SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(connect_options(url)?)
        .await
        .map_err(|e| connect_error(Engine::Sqlite, url, e))
}

/// The SQLite backend over an application's pool.
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    pool: SqlitePool,
    gate: WriteGate,
}

impl SqliteBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: SqlitePool) -> Self {
        Self {
            pool,
            gate: WriteGate::default(),
        }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// SQLite's statements.
static QUERIES: Queries = Queries {
    settle_count_delivered: include_str!("queries/queue/settle_count_delivered.sql"),
    settle_delete: include_str!("queries/queue/settle_delete.sql"),
    settle_done: include_str!("queries/queue/settle_done.sql"),
    settle_retry: include_str!("queries/queue/settle_retry.sql"),
    settle_release: include_str!("queries/queue/settle_release.sql"),
    settle_bury: &[
        include_str!("queries/queue/settle_bury_copy.sql"),
        include_str!("queries/queue/settle_delete.sql"),
    ],
    settle_owned: include_str!("queries/queue/settle_owned.sql"),
    settle_read_back: include_str!("queries/queue/settle_read_back.sql"),
    worker_heartbeat: include_str!("queries/queue/worker_heartbeat.sql"),
    worker_delete: include_str!("queries/queue/worker_delete.sql"),
    extend_leases: include_str!("queries/queue/extend_leases.sql"),
    rescue_expired: include_str!("queries/queue/rescue_expired.sql"),
    due_types: include_str!("queries/queue/due_types.sql"),
    prune_done: include_str!("queries/queue/prune_done.sql"),
    count_unfinished: include_str!("queries/queue/count_unfinished.sql"),
    unregistered_pending: include_str!("queries/queue/unregistered_pending.sql"),
    unregistered_bury: &[
        include_str!("queries/queue/unregistered_bury_copy.sql"),
        include_str!("queries/queue/unregistered_bury_delete.sql"),
    ],
    bucket_take: include_str!("queries/buckets/bucket_take.sql"),
    bucket_set: include_str!("queries/buckets/bucket_set.sql"),
    bucket_get: include_str!("queries/buckets/bucket_get.sql"),
    bucket_list: include_str!("queries/buckets/bucket_list.sql"),
    pause: include_str!("queries/pauses/pause.sql"),
    resume: include_str!("queries/pauses/resume.sql"),
    paused: include_str!("queries/pauses/paused.sql"),
    dead_letters_list: include_str!("queries/dead_letters/dead_letters_list.sql"),
    dead_letters_count: include_str!("queries/dead_letters/dead_letters_count.sql"),
    dead_letters_purge: include_str!("queries/dead_letters/dead_letters_purge.sql"),
    requeue: &[
        include_str!("queries/dead_letters/requeue_copy.sql"),
        include_str!("queries/dead_letters/requeue_delete.sql"),
    ],
    status_counts: include_str!("queries/stats/status_counts.sql"),
    live_list: include_str!("queries/live/live_list.sql"),
    live_list_by_recipient: include_str!("queries/live/live_list_by_recipient.sql"),
    live_count: include_str!("queries/live/live_count.sql"),
    live_held_keys: include_str!("queries/live/live_held_keys.sql"),
    live_count_by_recipient: include_str!("queries/live/live_count_by_recipient.sql"),
    live_retry_now: include_str!("queries/live/live_retry_now.sql"),
    live_cancel_select: include_str!("queries/live/live_cancel_select.sql"),
    group_cancel_select: include_str!("queries/groups/group_cancel_select.sql"),
    group_cancel_mark: include_str!("queries/groups/group_cancel_mark.sql"),
    cancel_delete: include_str!("queries/live/cancel_delete.sql"),
    groups_cancelled: include_str!("queries/groups/groups_cancelled.sql"),
    group_pause: include_str!("queries/groups/group_pause.sql"),
    group_resume: include_str!("queries/groups/group_resume.sql"),
    paused_groups: include_str!("queries/groups/paused_groups.sql"),
    group_show: include_str!("queries/groups/group_show.sql"),
    groups_list: include_str!("queries/groups/groups_list.sql"),
    group_hook_set: include_str!("queries/groups/group_hook_set.sql"),
    groups_finished: include_str!("queries/groups/groups_finished.sql"),
    group_complete: include_str!("queries/groups/group_complete.sql"),
    group_hook_enqueue: include_str!("queries/groups/group_hook_enqueue.sql"),
    stats_add: include_str!("queries/stats/stats_add.sql"),
    stats_prune: include_str!("queries/stats/stats_prune.sql"),
    stats_list: include_str!("queries/stats/stats_list.sql"),
    workers_seen: include_str!("queries/stats/workers_seen.sql"),
    breaker_insert: include_str!("queries/breakers/breaker_insert.sql"),
    breaker_open: include_str!("queries/breakers/breaker_open.sql"),
    breaker_take_probe: include_str!("queries/breakers/breaker_take_probe.sql"),
    breaker_probe_grant: include_str!("queries/breakers/breaker_probe_grant.sql"),
    breaker_probe_failed: include_str!("queries/breakers/breaker_probe_failed.sql"),
    breaker_close: include_str!("queries/breakers/breaker_close.sql"),
    breaker_probe_now: include_str!("queries/breakers/breaker_probe_now.sql"),
    breakers_list: include_str!("queries/breakers/breakers_list.sql"),
    steering: include_str!("queries/pauses/steering.sql"),
    suppression_add: include_str!("queries/suppressions/suppression_add.sql"),
    suppression_remove: include_str!("queries/suppressions/suppression_remove.sql"),
    suppressions_list: include_str!("queries/suppressions/suppressions_list.sql"),
    suppressions_count: include_str!("queries/suppressions/suppressions_count.sql"),
    suppression_check: include_str!("queries/suppressions/suppression_check.sql"),
    suppressed_list: include_str!("queries/suppressions/suppressed_list.sql"),
    prune_suppressed_select: include_str!("queries/suppressions/prune_suppressed_select.sql"),
    prune_suppressed_delete: include_str!("queries/suppressions/prune_suppressed_delete.sql"),
    groups_suppressed: include_str!("queries/suppressions/groups_suppressed.sql"),
    token_use: include_str!("queries/suppressions/token_use.sql"),
    tokens_used: include_str!("queries/suppressions/tokens_used.sql"),
    tokens_use: include_str!("queries/suppressions/tokens_use.sql"),
    suppressions_unnormalized: include_str!("queries/suppressions/suppressions_unnormalized.sql"),
    suppression_keep: include_str!("queries/suppressions/suppression_keep.sql"),
    tokens_forget: include_str!("queries/suppressions/tokens_forget.sql"),
    site_soft_commit: "",
    site_refund: include_str!("queries/shaping/site_refund.sql"),
    sites_in_force: include_str!("queries/shaping/sites_in_force.sql"),
    sites_prune: include_str!("queries/shaping/sites_prune.sql"),
    site_hits_prune: include_str!("queries/shaping/site_hits_prune.sql"),
    site_configure: include_str!("queries/shaping/site_configure.sql"),
    sites_unconfigure: include_str!("queries/shaping/sites_unconfigure.sql"),
    site_lock: include_str!("queries/shaping/site_lock.sql"),
    site_slots_count: include_str!("queries/shaping/site_slots_count.sql"),
    site_spend: include_str!("queries/shaping/site_spend.sql"),
    site_slot_take: include_str!("queries/shaping/site_slot_take.sql"),
    site_slot_release: include_str!("queries/shaping/site_slot_release.sql"),
    sites_list: include_str!("queries/shaping/sites_list.sql"),
    site_ensure: include_str!("queries/shaping/site_ensure.sql"),
    site_slow: include_str!("queries/shaping/site_slow.sql"),
    site_suspend: include_str!("queries/shaping/site_suspend.sql"),
    site_resume: include_str!("queries/shaping/site_resume.sql"),
    site_hit: include_str!("queries/shaping/site_hit.sql"),
    site_hits_forget: include_str!("queries/shaping/site_hits_forget.sql"),
    site_hits_count: include_str!("queries/shaping/site_hits_count.sql"),
    rule_put: include_str!("queries/shaping/rule_put.sql"),
    rule_remove: include_str!("queries/shaping/rule_remove.sql"),
    rules_list: include_str!("queries/shaping/rules_list.sql"),
    events_record: include_str!("queries/events/events_record.sql"),
    events_message_of: include_str!("queries/events/events_message_of.sql"),
    events_of_message: include_str!("queries/events/events_of_message.sql"),
    events_prune: include_str!("queries/events/events_prune.sql"),
    inbox_prune: include_str!("queries/inbox/inbox_prune.sql"),
    inbox_counts: include_str!("queries/inbox/inbox_counts.sql"),
    endpoint_put: include_str!("queries/endpoints/endpoint_put.sql"),
    endpoint_get: include_str!("queries/endpoints/endpoint_get.sql"),
    endpoints_list: include_str!("queries/endpoints/endpoints_list.sql"),
    endpoint_disable: include_str!("queries/endpoints/endpoint_disable.sql"),
    endpoint_enable: include_str!("queries/endpoints/endpoint_enable.sql"),
    endpoint_failing: include_str!("queries/endpoints/endpoint_failing.sql"),
    endpoint_healthy: include_str!("queries/endpoints/endpoint_healthy.sql"),
    endpoint_remove: include_str!("queries/endpoints/endpoint_remove.sql"),
    replay_done: include_str!("queries/queue/replay_done.sql"),
    settle_suppressed: include_str!("queries/queue/settle_suppressed.sql"),
};

impl Dialect for SqliteBackend {
    type Row = SqliteRow;
    type Tx = GatedTx;

    fn queries(&self) -> &'static Queries {
        &QUERIES
    }

    /// One host: the process clock is the time authority.
    fn database_clock(&self) -> bool {
        false
    }

    /// A write transaction that takes the write lock at once (a deferred one that reads
    /// first could fail with SQLITE_BUSY instead of waiting), in this writer's turn.
    fn begin_write(&self) -> BoxFuture<'_, Result<Self::Tx, sqlx::Error>> {
        Box::pin(async move {
            let turn = self.gate.turn().await;
            let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
            Ok(GatedTx::new(tx, turn))
        })
    }

    fn commit(tx: Self::Tx) -> BoxFuture<'static, Result<(), sqlx::Error>> {
        Box::pin(tx.commit())
    }

    fn rollback(tx: Self::Tx) -> BoxFuture<'static, Result<(), sqlx::Error>> {
        Box::pin(tx.rollback())
    }

    fn execute<'a>(
        &'a self,
        tx: Option<&'a mut Self::Tx>,
        sql: &'static str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<u64, sqlx::Error>> {
        Box::pin(async move {
            let query = bind(sqlx::query(sql), args);
            let done = match tx {
                Some(tx) => query.execute(tx.conn()).await?,
                // A statement on its own is a write transaction of its own.
                None => {
                    let _turn = self.gate.turn().await;
                    query.execute(&self.pool).await?
                }
            };
            Ok(done.rows_affected())
        })
    }

    fn fetch<'a>(
        &'a self,
        tx: Option<&'a mut Self::Tx>,
        sql: &'static str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<Vec<SqliteRow>, sqlx::Error>> {
        Box::pin(async move {
            let query = bind(sqlx::query(sql), args);
            match tx {
                Some(tx) => query.fetch_all(tx.conn()).await,
                // Reads: WAL readers never wait for the write lock.
                None => query.fetch_all(&self.pool).await,
            }
        })
    }

    /// SQLite waits for its lock itself (`busy_timeout`): nothing is worth running again.
    fn is_transient(_: &sqlx::Error) -> bool {
        false
    }

    /// One statement (see `claim.sql`).
    fn claim_rows<'a>(
        &'a self,
        r: &'a ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Claimed>, sqlx::Error>> {
        Box::pin(async move {
            let args = [
                Arg::Text(r.type_tag),
                Arg::OptInt(self.now_ms(r.now)),
                Arg::Int(i64::from(r.limit)),
                Arg::Text(r.owner),
                Arg::Int(millis_ceil(r.lease)),
            ];
            // A claim writes: it takes its turn.
            let turn = self.gate.turn().await;
            let rows = self
                .fetch(
                    None,
                    if r.ordered {
                        include_str!("queries/queue/claim_ordered.sql")
                    } else {
                        include_str!("queries/queue/claim.sql")
                    },
                    &args,
                )
                .await?;
            drop(turn);
            rows.iter().map(|row| claimed(row, true)).collect()
        })
    }
}

impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let ours: Migrator = migrations::migrator(MIGRATIONS);
            ours.run(&self.pool).await?;
            crate::backend::sql::suppressions::normalize_stored_addresses(self).await?;
            Ok(())
        })
    }

    fn wakeups(&self) -> Arc<Wakeups> {
        wakeups()
    }

    /// No growth: larger SQLite transactions drained a no-op backlog about 30 % faster but
    /// raised a worker's peak memory from about 27 to 46 MB (the allocator keeps what each
    /// connection thread used).
    fn max_default_batch(&self) -> usize {
        100
    }
}
