//! MySQL 8 and MariaDB ≥ 10.6 (feature `mysql`).
//!
//! The outbox's own engine on sqlx 0.9: a claim is one short READ COMMITTED transaction —
//! a `FOR UPDATE SKIP LOCKED` read of the due rows in claim order, then one `UPDATE` that
//! moves them to running with a lease (MySQL has no `UPDATE … RETURNING`); settlements are
//! written in batches in one transaction; new messages are found by the process's due
//! probe (MySQL has no commit notification). Every statement is static with bound parameters (batches
//! travel as one JSON parameter through `JSON_TABLE`), so the statement cache never churns
//! — the path on which sqlx 0.9's missing TCP_NODELAY costs 40 ms.
//!
//! Failure modes: deadlocks and lock wait timeouts are run again from the start; other
//! errors are retried by the worker after a pause; a process that dies loses its leases,
//! so its messages come back. An enqueue that hits a deadlock or a lock wait timeout inside
//! the caller's transaction rolls it back and leaves a read-only transaction in its place,
//! so that none of the caller's later statements commits on its own.

mod enqueue;

pub use super::nodelay::to_port as tcp_nodelay;

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use sqlx::{
    migrate::Migrator,
    mysql::{MySqlConnectOptions, MySqlPoolOptions, MySqlRow},
    MySql, MySqlConnection, MySqlPool,
};

use super::sql::{
    bind, quiet,
    rows::{claimed, json, millis_ceil},
    Arg, Dialect, Queries,
};
use super::{check_scheme, connect_error, probe, Engine};
use crate::{
    error::Error,
    store::{Backend, ClaimRequest, Claimed, Wakeups},
};

use crate::backend::migrations;

/// The migration files of `migrations/mysql/`, embedded by the build script.
const MIGRATIONS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/migrations_mysql.rs"));

/// Where the tests and examples look for MariaDB/MySQL unless told otherwise.
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// Opens a pool on `url` (e.g. `mysql://user@host/db`) with a statement cache large
/// enough for every statement the outbox uses. Its statements log at TRACE, and slow ones
/// (a second) at DEBUG, not WARN. `mariadb://` URLs are taken too.
///
/// Fails at once with [`Error::Connect`], saying what to do, when `url` is not a
/// MariaDB/MySQL URL (a SQLite or PostgreSQL URL gets the name of the function that opens
/// it), the server refuses the connection, the login or the database name, or TLS fails;
/// after 10 s when the server does not answer.
///
/// TLS follows the URL (`ssl-mode=REQUIRED`, `VERIFY_IDENTITY` with `ssl-ca=PATH`, …; see
/// the backends guide); a certificate or key file it names that cannot be read is an
/// error naming the parameter and the path ([`check_tls_files`](super::check_tls_files)).
///
/// Its TCP connections get `TCP_NODELAY`, which sqlx 0.9 leaves off: without it a statement
/// the driver writes in several pieces (a batch of settlements, a large enqueue) waits up to
/// 40 ms for the server's delayed acknowledgement.
pub async fn connect(url: &str) -> Result<MySqlPool, Error> {
    check_scheme(Engine::MySql, url)?;
    super::check_tls_files(url)?;
    let options: MySqlConnectOptions = url
        .parse()
        .map_err(|e| connect_error(Engine::MySql, url, e))?;
    let options = quiet(options.statement_cache_capacity(256));
    probe::<MySqlConnection>(Engine::MySql, url, &options).await?;
    let port = options.get_port();
    MySqlPoolOptions::new()
        .after_connect(move |_, _| {
            Box::pin(async move {
                super::nodelay::to_port(port);
                Ok(())
            })
        })
        .max_connections(20)
        .min_connections(super::connect::WARM_CONNECTIONS)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options)
        .await
        .map_err(|e| connect_error(Engine::MySql, url, e))
}

/// The MySQL/MariaDB backend over an application's pool.
#[derive(Debug, Clone)]
pub struct MySqlBackend {
    pool: MySqlPool,
    wakeups: Arc<Wakeups>,
}

impl MySqlBackend {
    /// Uses `pool` for the workers; enqueue goes through the caller's own transactions.
    pub fn new(pool: MySqlPool) -> Self {
        Self {
            pool,
            wakeups: Arc::default(),
        }
    }

    /// The pool the workers use.
    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }
}

/// MySQL's statements.
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

impl Dialect for MySqlBackend {
    type Row = MySqlRow;
    type Tx = sqlx::Transaction<'static, MySql>;

    fn queries(&self) -> &'static Queries {
        &QUERIES
    }

    /// `@@timestamp` (the statement's start, in UTC whatever the session's time zone):
    /// every host agrees on due times, leases and refills.
    fn database_clock(&self) -> bool {
        true
    }

    /// A READ COMMITTED transaction (no gap locks, whatever the server's default; the
    /// setting covers this transaction only, so the application's connections are
    /// unaffected).
    fn begin_write(&self) -> BoxFuture<'_, Result<Self::Tx, sqlx::Error>> {
        Box::pin(async move {
            let mut conn = self.pool.acquire().await?;
            sqlx::raw_sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
                .execute(&mut *conn)
                .await?;
            sqlx::Transaction::begin(conn, None).await
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
    ) -> BoxFuture<'a, Result<Vec<MySqlRow>, sqlx::Error>> {
        Box::pin(async move {
            let query = bind(sqlx::query(sql), args);
            match tx {
                Some(tx) => query.fetch_all(&mut **tx).await,
                None => query.fetch_all(&self.pool).await,
            }
        })
    }

    /// Deadlock (1213) and lock wait timeout (1205): the transaction was rolled back and
    /// may simply be run again.
    fn is_transient(e: &sqlx::Error) -> bool {
        matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001") | Some("HY000"))
            && (d.message().contains("Deadlock") || d.message().contains("Lock wait timeout")))
    }

    /// One short transaction: a locking read of the due rows, then one update (see
    /// `claim_*.sql`), run again after a deadlock or lock wait timeout.
    fn claim_rows<'a>(
        &'a self,
        r: &'a ClaimRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<Claimed>, sqlx::Error>> {
        Box::pin(async move {
            let now = self.now_ms(r.now);
            let mut attempt = 0;
            loop {
                match self.claim_once(r, now).await {
                    Err(e) if Self::is_transient(&e) && attempt < 8 => {
                        attempt += 1;
                        tokio::time::sleep(Duration::from_millis(5 * attempt)).await;
                    }
                    other => return other,
                }
            }
        })
    }

    /// The token statement reads `now` three times (a single-table update, so its SET list
    /// runs left to right): now, now, name, now.
    fn take_token_args(now: Option<f64>, bucket: &str) -> Vec<Arg<'_>> {
        let now = Arg::OptReal(now);
        vec![now, now, Arg::Text(bucket), now]
    }
}

impl MySqlBackend {
    /// One run of the claim transaction.
    async fn claim_once(
        &self,
        r: &ClaimRequest<'_>,
        now: Option<i64>,
    ) -> Result<Vec<Claimed>, sqlx::Error> {
        let mut tx = self.begin_write().await?;
        let args = [
            Arg::Text(r.type_tag),
            Arg::OptInt(now),
            Arg::Text(r.type_tag),
            Arg::Int(i64::from(r.limit)),
        ];
        let select = if r.ordered {
            include_str!("queries/queue/claim_select_ordered.sql")
        } else {
            include_str!("queries/queue/claim_select.sql")
        };
        let rows = self.fetch(Some(&mut tx), select, &args).await?;
        // The rows were read before the update counts the attempt and the claim.
        let claimed = rows
            .iter()
            .map(|row| claimed(row, false))
            .collect::<Result<Vec<_>, _>>()?;
        if !claimed.is_empty() {
            let ids: Vec<&str> = claimed.iter().map(|c| c.id.as_str()).collect();
            let ids = json(&ids)?;
            let args = [
                Arg::Text(r.owner),
                Arg::OptInt(now),
                Arg::Int(millis_ceil(r.lease)),
                Arg::Text(&ids),
            ];
            let mark = include_str!("queries/queue/claim_mark.sql");
            self.execute(Some(&mut tx), mark, &args).await?;
        }
        tx.commit().await?;
        Ok(claimed)
    }
}

impl Backend for MySqlBackend {
    fn name(&self) -> &'static str {
        "mysql"
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
        Arc::clone(&self.wakeups)
    }
}
