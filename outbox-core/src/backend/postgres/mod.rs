//! PostgreSQL (feature `postgres`).
//!
//! The outbox's own engine: a claim is one `UPDATE … FROM (SELECT … FOR UPDATE SKIP
//! LOCKED) RETURNING`, so concurrent workers in any number of processes never take the same
//! message; settlements are written in batches in one transaction. Enqueues wake idle
//! workers through LISTEN/NOTIFY (the insert statements notify at commit; one
//! listening connection per backend); delayed and retried messages are found by the
//! process's due probe.
//!
//! Failure modes: a claim or a settlement that fails is retried after a pause (a
//! serialization failure or deadlock at once); a lost LISTEN connection is reopened and
//! the workers are woken in case they missed a notification; a process that dies loses
//! its leases, so its messages come back.

mod enqueue;

pub use super::nodelay::to_port as tcp_nodelay;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    postgres::{PgConnectOptions, PgListener, PgPoolOptions, PgRow},
    PgConnection, PgPool, Postgres,
};

use super::sql::{
    bind, quiet,
    rows::{claimed_from, millis_ceil, ClaimColumns},
    Arg, Dialect, Queries,
};
use super::{check_scheme, connect_error, probe, Engine};
use crate::{
    error::Error,
    store::{Backend, ClaimRequest, Claimed, Wakeups},
};

use crate::backend::migrations;

/// The migration files of `migrations/postgres/`, embedded by the build script.
const MIGRATIONS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations_postgres.rs"));

/// Where the tests and examples look for PostgreSQL unless told otherwise.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The channel the insert trigger notifies (payload: the type tag).
const CHANNEL: &str = "outbox_messages";

/// Opens a pool on `url` (e.g. `postgres://user@host/db`). Use the same database for the
/// application's transactions and for the outbox. Its statements log at TRACE, and slow
/// ones (a second) at DEBUG, not WARN.
///
/// Fails at once with [`Error::Connect`], saying what to do, when `url` is not a
/// PostgreSQL URL (a SQLite or MariaDB URL gets the name of the function that opens it),
/// the server refuses the connection, the login or the database name, or TLS fails; after
/// 10 s when the server does not answer.
///
/// TLS follows the URL (`sslmode=require`, `verify-full` with `sslrootcert=PATH`, …; see
/// the backends guide); a certificate or key file it names that cannot be read is an
/// error naming the parameter and the path ([`check_tls_files`](super::check_tls_files)).
///
/// Its connections run with PostgreSQL's JIT compilation off (`jit=off`) unless the URL
/// says otherwise (`options=-c%20jit%3Don`): the queue's statements are short, and their
/// planner estimates can cross `jit_above_cost`, so each run would compile them again
/// (tens of milliseconds, measured to halve the drain). A pool of the application's own
/// should do the same.
///
/// Its TCP connections get `TCP_NODELAY`, which sqlx 0.9 leaves off: without it a statement
/// the driver writes in several pieces (a batch of settlements, a large enqueue) waits up to
/// 40 ms for the server's delayed acknowledgement, which held the drain here to less than half
/// its speed (19,000/s against 42,500/s).
pub async fn connect(url: &str) -> Result<PgPool, Error> {
    check_scheme(Engine::Postgres, url)?;
    super::check_tls_files(url)?;
    let options: PgConnectOptions = quiet(
        url.parse()
            .map_err(|e| connect_error(Engine::Postgres, url, e))?,
    );
    probe::<PgConnection>(Engine::Postgres, url, &options).await?;
    // A `SET` once connected, not a startup option: connection poolers such as PgBouncer
    // refuse unknown startup parameters by default.
    let keeps_jit = url
        .split_once('?')
        .is_some_and(|(_, query)| query.contains("jit"));
    let port = options.get_port();
    PgPoolOptions::new()
        .after_connect(move |conn, _| {
            Box::pin(async move {
                super::nodelay::to_port(port);
                if !keeps_jit {
                    sqlx::Executor::execute(conn, "SET jit = off").await?;
                }
                Ok(())
            })
        })
        .max_connections(20)
        .min_connections(super::connect::WARM_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .map_err(|e| connect_error(Engine::Postgres, url, e))
}

/// The PostgreSQL backend over an application's pool.
#[derive(Debug, Clone)]
pub struct PostgresBackend {
    pool: PgPool,
    wake: Arc<Wake>,
}

/// The idle workers of this backend, and whether its LISTEN task runs (it runs while any
/// worker waits, and holds one pooled connection meanwhile).
#[derive(Debug, Default)]
struct Wake {
    wakeups: Arc<Wakeups>,
    listening: AtomicBool,
}

impl PostgresBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            wake: Arc::default(),
        }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Listens for the insert trigger's notifications and wakes the workers, reconnecting
    /// after a lost connection, until no worker waits any more.
    fn listen(&self) {
        let pool = self.pool.clone();
        let wake = Arc::clone(&self.wake);
        tokio::spawn(async move {
            let wakeups = Arc::clone(&wake.wakeups);
            let mut pause = Duration::from_millis(100);
            loop {
                let listener = async {
                    let mut l = PgListener::connect_with(&pool).await?;
                    l.listen(CHANNEL).await?;
                    Ok::<_, sqlx::Error>(l)
                };
                match listener.await {
                    Ok(mut l) => {
                        pause = Duration::from_millis(100);
                        // Anything committed while not listening is found by this claim.
                        wakeups.notify_all();
                        let lost = loop {
                            let received = tokio::select! {
                                r = l.recv() => r,
                                // Now and then, see whether anyone still listens.
                                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                                    if wakeups.has_subscribers() {
                                        continue;
                                    }
                                    break false;
                                }
                            };
                            match received {
                                Ok(n) => wakeups.notify(n.payload()),
                                // A connection that broke is the database out of reach,
                                // which the workers report once for the process.
                                Err(e) if crate::error::connection_failed(&e) => {
                                    tracing::debug!(error = %e, "lost the LISTEN connection; reopening it");
                                    break true;
                                }
                                Err(e) => {
                                    tracing::warn!(error = %e, "lost the LISTEN connection; reopening it");
                                    break true;
                                }
                            }
                        };
                        if !lost {
                            wake.listening.store(false, Ordering::SeqCst);
                            // A worker that subscribed meanwhile needs this task after all.
                            if !wakeups.has_subscribers()
                                || wake.listening.swap(true, Ordering::SeqCst)
                            {
                                return;
                            }
                            continue;
                        }
                    }
                    Err(e) if crate::error::connection_failed(&e) => {
                        tracing::debug!(error = %e, retry_in = ?pause, "cannot LISTEN for new messages; the due probe finds them meanwhile");
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, retry_in = ?pause, "cannot LISTEN for new messages; the due probe finds them meanwhile");
                    }
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(10));
            }
        });
    }
}

/// PostgreSQL's statements.
static QUERIES: Queries = Queries {
    settle_count_delivered: include_str!("queries/queue/settle_count_delivered.sql"),
    settle_delete: include_str!("queries/queue/settle_delete.sql"),
    settle_done: include_str!("queries/queue/settle_done.sql"),
    settle_retry: include_str!("queries/queue/settle_retry.sql"),
    settle_release: include_str!("queries/queue/settle_release.sql"),
    settle_bury: &[include_str!("queries/queue/settle_bury.sql")],
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
    unregistered_bury: &[include_str!("queries/queue/unregistered_bury.sql")],
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
    site_soft_commit: "SET LOCAL synchronous_commit TO OFF",
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

impl Dialect for PostgresBackend {
    type Row = PgRow;
    type Tx = sqlx::Transaction<'static, Postgres>;

    fn queries(&self) -> &'static Queries {
        &QUERIES
    }

    /// `now()`: every host agrees on due times, leases and refills.
    fn database_clock(&self) -> bool {
        true
    }

    fn begin_write(&self) -> BoxFuture<'_, Result<Self::Tx, sqlx::Error>> {
        Box::pin(self.pool.begin())
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
                Some(tx) => query.execute(&mut **tx).await?,
                None => query.execute(&self.pool).await?,
            };
            Ok(done.rows_affected())
        })
    }

    fn fetch<'a>(
        &'a self,
        tx: Option<&'a mut Self::Tx>,
        sql: &'static str,
        args: &'a [Arg<'a>],
    ) -> BoxFuture<'a, Result<Vec<PgRow>, sqlx::Error>> {
        Box::pin(async move {
            let query = bind(sqlx::query(sql), args);
            match tx {
                Some(tx) => query.fetch_all(&mut **tx).await,
                None => query.fetch_all(&self.pool).await,
            }
        })
    }

    /// Serialization failure (40001) and deadlock (40P01): the transaction was rolled back
    /// and may simply run again.
    fn is_transient(e: &sqlx::Error) -> bool {
        matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001") | Some("40P01")))
    }

    /// One statement (see `claim.sql`), its rows read as the types the table declares (the
    /// claim is the hottest read: no width is guessed).
    fn claim_rows<'a>(
        &'a self,
        r: &'a ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Claimed>, sqlx::Error>> {
        type Row = (
            String,
            Vec<u8>,
            i32,
            i32,
            i32,
            i64,
            i32,
            Option<String>,
            i64,
        );
        Box::pin(async move {
            let sql = if r.ordered {
                include_str!("queries/queue/claim_ordered.sql")
            } else {
                include_str!("queries/queue/claim.sql")
            };
            let rows: Vec<Row> = sqlx::query_as(sql)
                .bind(r.type_tag)
                .bind(self.now_ms(r.now))
                .bind(i64::from(r.limit))
                .bind(r.owner)
                .bind(millis_ceil(r.lease))
                .fetch_all(&self.pool)
                .await?;
            Ok(rows
                .into_iter()
                .map(
                    |(id, payload, attempt, max, priority, due, claim, group, enqueued)| {
                        claimed_from(ClaimColumns {
                            id,
                            payload,
                            attempt: attempt.into(),
                            max_attempts: max.into(),
                            priority: priority.into(),
                            due_at: due,
                            claim: claim.into(),
                            group,
                            enqueued_at: enqueued,
                        })
                    },
                )
                .collect())
        })
    }
}

impl Backend for PostgresBackend {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn migrate(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            let mut ours: Migrator = migrations::migrator(MIGRATIONS);
            // A pre-release schema step that read apalis' tables was withdrawn.
            ours.set_ignore_missing(true);
            ours.run(&self.pool).await?;
            crate::backend::sql::suppressions::normalize_stored_addresses(self).await?;
            Ok(())
        })
    }

    fn wakeups(&self) -> Arc<Wakeups> {
        if !self.wake.listening.swap(true, Ordering::SeqCst) {
            self.listen();
        }
        Arc::clone(&self.wake.wakeups)
    }
}
