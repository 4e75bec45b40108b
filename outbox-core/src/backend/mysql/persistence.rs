//! apalis-core's `Persistence` on MySQL/MariaDB: register, heartbeat, claim with
//! `FOR UPDATE SKIP LOCKED`, lock/ack events and orphan recovery — the role
//! apalis-sqlite's and apalis-postgres' persistence play for their databases.

use std::{str::FromStr, time::Duration};

use apalis_core::{
    backend::persistence::{Persistence, TaskEvent},
    task::{builder::TaskBuilder, status::Status, task_id::TaskId, Task},
    worker::context::WorkerContext,
};
use serde_json::Value;
use sqlx::MySqlPool;

/// How one queue's worker talks to MySQL.
#[derive(Debug, Clone)]
pub(crate) struct MySqlPersistence {
    pub(crate) pool: MySqlPool,
    pub(crate) queue: String,
    pub(crate) batch_size: usize,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) missed_heartbeats: usize,
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn json_ids<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    serde_json::to_string(&ids.into_iter().collect::<Vec<_>>()).expect("strings serialize")
}

/// Deadlock (1213) and lock wait timeout (1205): the transaction was rolled back and may
/// simply be run again.
fn is_transient(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40001") | Some("HY000"))
        && (d.message().contains("Deadlock") || d.message().contains("Lock wait timeout")))
}

/// Runs `$body` in a READ COMMITTED transaction on one pooled connection (no gap locks,
/// whatever the server's default; the setting covers this transaction only, so the
/// application's connections are unaffected), retrying it when InnoDB reports a deadlock
/// or a lock wait timeout. Any other error is returned (and ends the worker, which the
/// outbox restarts).
macro_rules! in_transaction {
    ($self:ident, |$tx:ident| $body:block) => {{
        let mut attempt = 0u32;
        loop {
            let mut conn = $self.pool.acquire().await?;
            sqlx::raw_sql("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
                .execute(&mut *conn)
                .await?;
            let mut $tx = sqlx::Connection::begin(&mut *conn).await?;
            let result: Result<_, sqlx::Error> = async { $body }.await;
            match result {
                Ok(value) => {
                    $tx.commit().await?;
                    break Ok(value);
                }
                Err(e) if is_transient(&e) && attempt < 8 => {
                    drop($tx);
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(
                        5 * u64::from(attempt) + u64::from(attempt * 7 % 11),
                    ))
                    .await;
                }
                Err(e) => break Err(e),
            }
        }
    }};
}

type JobRow = (
    Vec<u8>,
    String,
    String,
    String,
    i32,
    i32,
    i64,
    Option<String>,
    i32,
    Option<String>,
);

/// Builds the apalis task of one claimed row.
fn task_of(row: JobRow) -> Result<Task<Vec<u8>>, sqlx::Error> {
    let (job, id, job_type, status, attempts, max_attempts, run_at, lock_by, priority, key) = row;
    let ulid = ulid::Ulid::from_string(&id).map_err(|e| sqlx::Error::Decode(e.into()))?;
    let status = Status::from_str(&status).map_err(|e| sqlx::Error::Decode(e.into()))?;
    let mut builder = TaskBuilder::new(job)
        .task_id(TaskId::from_ulid(ulid))
        .queue(job_type.into())
        .status(status)
        .attempt(attempts.max(0) as usize)
        .max_attempts(max_attempts.max(1) as usize)
        .run_at_timestamp(run_at.max(0) as u64)
        .lock_by(lock_by)
        .priority(priority.max(0) as usize);
    if let Some(key) = key {
        builder = builder.idempotency_key(key);
    }
    Ok(builder.build())
}

impl Persistence for MySqlPersistence {
    type Compact = Vec<u8>;
    type Response = Value;
    type Error = sqlx::Error;

    async fn register(&mut self, worker: &WorkerContext) -> Result<(), sqlx::Error> {
        sqlx::query(include_str!("queries/register_worker.sql"))
            .bind(worker.name())
            .bind(&self.queue)
            .bind(now_secs())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn heartbeat(&mut self, worker: &WorkerContext) -> Result<(), sqlx::Error> {
        let now = now_secs();
        let seen = in_transaction!(self, |tx| {
            sqlx::query(include_str!("queries/keep_alive.sql"))
                .bind(now)
                .bind(worker.name())
                .execute(&mut *tx)
                .await
        });
        if seen?.rows_affected() == 0 {
            // The worker row was removed by hand: register again rather than die.
            self.register(worker).await?;
        }
        let lease = self.heartbeat_interval.as_secs() as i64 * self.missed_heartbeats as i64;
        let recovered = in_transaction!(self, |tx| {
            sqlx::query(include_str!("queries/reenqueue_orphaned.sql"))
                .bind(&self.queue)
                .bind(now - lease)
                .bind(worker.name())
                .execute(&mut *tx)
                .await
        })?
        .rows_affected();
        if recovered > 0 {
            tracing::info!(queue = %self.queue, recovered, "re-enqueued messages of workers presumed dead");
        }
        Ok(())
    }

    async fn fetch_next(
        &mut self,
        worker: &WorkerContext,
    ) -> Result<Vec<Task<Vec<u8>>>, sqlx::Error> {
        let now = now_secs();
        let rows: Vec<JobRow> = in_transaction!(self, |tx| {
            let mut ids: Vec<String> =
                sqlx::query_scalar(include_str!("queries/fetch_pending_ids.sql"))
                    .bind(&self.queue)
                    .bind(now)
                    .bind(self.batch_size as i64)
                    .fetch_all(&mut *tx)
                    .await?;
            if ids.len() < self.batch_size {
                let failed: Vec<String> =
                    sqlx::query_scalar(include_str!("queries/fetch_failed_ids.sql"))
                        .bind(&self.queue)
                        .bind(now)
                        .bind((self.batch_size - ids.len()) as i64)
                        .fetch_all(&mut *tx)
                        .await?;
                ids.extend(failed);
            }
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let ids = json_ids(ids.iter().map(String::as_str));
            sqlx::query(include_str!("queries/claim.sql"))
                .bind(worker.name())
                .bind(now)
                .bind(&ids)
                .execute(&mut *tx)
                .await?;
            sqlx::query_as(include_str!("queries/fetch_rows.sql"))
                .bind(&ids)
                .fetch_all(&mut *tx)
                .await
        })?;
        rows.into_iter().map(task_of).collect()
    }

    async fn reenqueue_abandoned(
        &mut self,
        tasks: Vec<Task<Vec<u8>>>,
        worker: &WorkerContext,
    ) -> Result<u64, sqlx::Error> {
        let ids: Vec<String> = tasks
            .iter()
            .filter_map(|t| t.task_id().map(|id| id.to_string()))
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        let ids = json_ids(ids.iter().map(String::as_str));
        let done = in_transaction!(self, |tx| {
            sqlx::query(include_str!("queries/release.sql"))
                .bind(worker.name())
                .bind(&ids)
                .execute(&mut *tx)
                .await
        })?;
        Ok(done.rows_affected())
    }

    async fn handle_events(
        &mut self,
        events: Vec<TaskEvent<Value>>,
        worker: &WorkerContext,
    ) -> Result<(), sqlx::Error> {
        let now = now_secs();
        let locks: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                TaskEvent::Lock { task_id } => Some(task_id.to_string()),
                _ => None,
            })
            .collect();
        let mut acks: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                TaskEvent::Complete(done) => Some(done),
                _ => None,
            })
            .collect();
        // One order for every worker's row locks.
        acks.sort_by_key(|done| done.task_id.to_string());
        in_transaction!(self, |tx| {
            if !locks.is_empty() {
                sqlx::query(include_str!("queries/lock.sql"))
                    .bind(now)
                    .bind(worker.name())
                    .bind(json_ids(locks.iter().map(String::as_str)))
                    .execute(&mut *tx)
                    .await?;
            }
            if !acks.is_empty() {
                let batch = acks
                    .iter()
                    .map(|done| {
                        Ok(serde_json::json!({
                            "id": done.task_id.to_string(),
                            "status": done.status.to_string(),
                            "attempts": done.attempt,
                            "result": serde_json::to_string(&done.result)?,
                        }))
                    })
                    .collect::<Result<Vec<_>, serde_json::Error>>()
                    .map_err(|e| sqlx::Error::Encode(e.into()))?;
                sqlx::query(include_str!("queries/ack.sql"))
                    .bind(now)
                    .bind(worker.name())
                    .bind(serde_json::Value::Array(batch).to_string())
                    .execute(&mut *tx)
                    .await?;
            }
            Ok(())
        })
    }

    async fn push_tasks(&mut self, tasks: Vec<Task<Vec<u8>>>) -> Result<(), sqlx::Error> {
        Err(sqlx::Error::Protocol(format!(
            "push_tasks ({} tasks) is not supported on the outbox MySQL backend; enqueue with OutboxMessage::enqueue",
            tasks.len()
        )))
    }
}
