//! The backend-neutral half of a batch insert: encoding the rows as one JSON parameter
//! (so every backend runs one static statement per chunk, whatever its size), and
//! matching what the database wrote back to the input, in order.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::{
    enqueue::{Enqueued, NewMessage},
    MessageId,
};

/// One row as the PostgreSQL and MySQL insert statements read it from their JSON parameter.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    queue: &'a str,
    /// The payload's JSON text (serde_json output is always UTF-8).
    job: &'a str,
    /// Due time, unix ms.
    due: i64,
    /// Enqueue time, unix ms.
    at: i64,
    priority: u16,
    max_attempts: u32,
    /// Left out when absent, so every database reads SQL NULL.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
}

/// A message's due time in unix ms: a requested delay is rounded up (never early), "now"
/// is not.
pub(crate) fn due_millis(m: &NewMessage) -> i64 {
    if m.due_at > m.enqueued_at {
        crate::clock::unix_millis_ceil(m.due_at)
    } else {
        crate::clock::unix_millis(m.due_at)
    }
}

/// Binds one message's columns in the order of every backend's `enqueue_one.sql`: id,
/// type, payload, max attempts, due (unix ms), priority, idempotency key, enqueued at.
macro_rules! bind_message {
    ($query:expr, $m:expr) => {
        $query
            .bind($m.id.as_str())
            .bind($m.queue)
            .bind(&$m.payload)
            .bind(i64::from($m.max_attempts))
            .bind($crate::backend::enqueue_batch::due_millis($m))
            .bind(i32::from($m.priority))
            .bind($m.idempotency_key.as_deref())
            .bind($crate::clock::unix_millis($m.enqueued_at))
    };
}

pub(crate) use bind_message;

/// One row as a JSON array, in [`Row`]'s field order: read by position, without key names
/// to write, parse and look up.
#[cfg(feature = "sqlite")]
#[derive(Serialize)]
struct RowArray<'a>(
    &'a str,
    &'a str,
    &'a str,
    i64,
    i64,
    u16,
    u32,
    Option<&'a str>,
);

/// The rows as a JSON array of arrays (see [`RowArray`]), for the SQLite insert statement.
#[cfg(feature = "sqlite")]
pub(crate) fn encode_row_arrays(rows: &[NewMessage]) -> Result<String, sqlx::Error> {
    let encoded = rows
        .iter()
        .map(|m| {
            Ok(RowArray(
                m.id.as_str(),
                m.queue,
                std::str::from_utf8(&m.payload).map_err(|e| sqlx::Error::Encode(e.into()))?,
                due_millis(m),
                crate::clock::unix_millis(m.enqueued_at),
                m.priority,
                m.max_attempts,
                m.idempotency_key.as_deref(),
            ))
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    serde_json::to_string(&encoded).map_err(|e| sqlx::Error::Encode(e.into()))
}

/// The rows as a JSON array of objects for the insert statement.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn encode_rows(rows: &[NewMessage]) -> Result<String, sqlx::Error> {
    let encoded = rows
        .iter()
        .map(|m| {
            Ok(Row {
                id: m.id.as_str(),
                queue: m.queue,
                job: std::str::from_utf8(&m.payload).map_err(|e| sqlx::Error::Encode(e.into()))?,
                due: due_millis(m),
                at: crate::clock::unix_millis(m.enqueued_at),
                priority: m.priority,
                max_attempts: m.max_attempts,
                key: m.idempotency_key.as_deref(),
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    serde_json::to_string(&encoded).map_err(|e| sqlx::Error::Encode(e.into()))
}

/// The keys, per queue, of rows that were not written (their holders must be looked up).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn keys_to_resolve<'r>(
    rows: &'r [NewMessage],
    written: &HashSet<String>,
) -> HashMap<&'static str, Vec<&'r str>> {
    let mut wanted: HashMap<&'static str, Vec<&'r str>> = HashMap::new();
    for m in rows.iter().filter(|m| !written.contains(m.id.as_str())) {
        if let Some(k) = &m.idempotency_key {
            wanted.entry(m.queue).or_default().push(k.as_str());
        }
    }
    wanted
}

/// One result per input row: written, or a duplicate of the message holding its key.
pub(crate) fn resolve(
    rows: &[NewMessage],
    written: &HashSet<String>,
    holders: &HashMap<(String, String), String>,
) -> Result<Vec<Enqueued>, sqlx::Error> {
    rows.iter()
        .map(|m| {
            if written.contains(m.id.as_str()) {
                return Ok(Enqueued::New(m.id.clone()));
            }
            m.idempotency_key
                .as_ref()
                .and_then(|k| holders.get(&(m.queue.to_owned(), k.clone())))
                .map(|id| Enqueued::Duplicate {
                    existing: MessageId::from_string(id.clone()),
                })
                .ok_or_else(|| {
                    sqlx::Error::Protocol(format!(
                        "message {} was neither written nor found as a duplicate",
                        m.id
                    ))
                })
        })
        .collect()
}

/// The text of the statement file `$file` in the backend's query folder `$dir`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! sql_file {
    ($dir:literal, $file:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $dir, "/", $file))
    };
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use sql_file;

/// Runs a batch insert (`enqueue.sql` in `$dir`) and yields the ids it wrote (`None`: all).
///
/// `returning`: the statement reads the rows as JSON objects and returns the ids
/// (`RETURNING id`). `counted` (SQLite): it reads the rows as JSON arrays, returns nothing,
/// and only its row count is read; all ids were written when it equals the batch, and only
/// when some keys were taken does `written_ids.sql` ask which of the batch's ids are there
/// (on SQLite `RETURNING` runs every row through a temporary table: 1.4–1.7× the time of
/// the insert alone for a large fan-out).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! insert_batch {
    (returning, $conn:expr, $dir:literal, $rows:expr) => {
        Some(
            sqlx::query_scalar::<_, String>($crate::backend::enqueue_batch::sql_file!(
                $dir,
                "enqueue.sql"
            ))
            .bind($crate::backend::enqueue_batch::encode_rows($rows)?)
            .fetch_all(&mut *$conn)
            .await?,
        )
    };
    (counted, $conn:expr, $dir:literal, $rows:expr) => {{
        let done = sqlx::query($crate::backend::enqueue_batch::sql_file!(
            $dir,
            "enqueue.sql"
        ))
        .bind($crate::backend::enqueue_batch::encode_row_arrays($rows)?)
        .execute(&mut *$conn)
        .await?;
        if done.rows_affected() == $rows.len() as u64 {
            None
        } else {
            let ids: Vec<&str> = $rows.iter().map(|m| m.id.as_str()).collect();
            sqlx::query_scalar::<_, String>($crate::backend::enqueue_batch::sql_file!(
                $dir,
                "written_ids.sql"
            ))
            .bind(serde_json::to_string(&ids).map_err(|e| sqlx::Error::Encode(e.into()))?)
            .fetch_all(&mut *$conn)
            .await
            .map(Some)?
        }
    }};
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use insert_batch;

/// Runs the one-row insert (`enqueue_one.sql` in `$dir`) and yields the ids it wrote, as
/// [`insert_batch!`] does: `returning` reads the id it returns; `counted` (SQLite) reads
/// only its row count (SQLite's `RETURNING` goes through a temporary table: about a fifth
/// of the statement's instructions).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! insert_one {
    (returning, $conn:expr, $dir:literal, $m:expr) => {
        $crate::backend::enqueue_batch::bind_message!(
            sqlx::query_scalar($crate::backend::enqueue_batch::sql_file!(
                $dir,
                "enqueue_one.sql"
            )),
            $m
        )
        .fetch_optional(&mut *$conn)
        .await?
        .map(|id| vec![id])
        .or(Some(Vec::new()))
    };
    (counted, $conn:expr, $dir:literal, $m:expr) => {{
        let done = $crate::backend::enqueue_batch::bind_message!(
            sqlx::query($crate::backend::enqueue_batch::sql_file!(
                $dir,
                "enqueue_one.sql"
            )),
            $m
        )
        .execute(&mut *$conn)
        .await?;
        if done.rows_affected() == 1 {
            None
        } else {
            Some(Vec::new())
        }
    }};
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use insert_one;

/// `InsertMessages` for a connection type whose insert skips a taken key without an error,
/// reading `enqueue.sql`, `enqueue_one.sql` and `find_by_keys.sql` from `$dir`; `batch`
/// says how the inserts tell what they wrote ([`insert_batch!`], [`insert_one!`]); `$after`, if given,
/// runs on the connection once rows were written (to arrange a wake-up at commit).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
macro_rules! batch_enqueue {
    ($conn:ty, $dir:literal, batch = $batch:ident $(, after = $after:path)?) => {
        impl $crate::enqueue::InsertMessages for $conn {
            fn insert_messages<'a>(
                &'a mut self,
                rows: &'a [$crate::enqueue::NewMessage],
            ) -> futures::future::BoxFuture<'a, Result<Vec<$crate::enqueue::Enqueued>, sqlx::Error>>
            {
                use $crate::backend::enqueue_batch::{keys_to_resolve, resolve};
                Box::pin(async move {
                    let written: Option<Vec<String>> = match rows {
                        // One message (the common case): a plain one-row insert.
                        [m] => $crate::backend::enqueue_batch::insert_one!($batch, self, $dir, m),
                        _ => $crate::backend::enqueue_batch::insert_batch!($batch, self, $dir, rows),
                    };
                    // Every message written (ids are fresh, so as many ids as rows means
                    // all of them): nothing to look up.
                    let written = written.filter(|w| w.len() < rows.len());
                    $(
                        if written.as_ref().is_none_or(|w| !w.is_empty()) {
                            $after(&mut *self, rows).await?;
                        }
                    )?
                    let Some(written) = written else {
                        return Ok(rows
                            .iter()
                            .map(|m| $crate::enqueue::Enqueued::New(m.id.clone()))
                            .collect());
                    };
                    let written: std::collections::HashSet<String> = written.into_iter().collect();
                    let mut holders = std::collections::HashMap::new();
                    for (queue, keys) in keys_to_resolve(rows, &written) {
                        let found: Vec<(String, String)> = sqlx::query_as($crate::backend::enqueue_batch::sql_file!($dir, "find_by_keys.sql"))
                        .bind(queue)
                        .bind(
                            serde_json::to_string(&keys)
                                .map_err(|e| sqlx::Error::Encode(e.into()))?,
                        )
                        .fetch_all(&mut *self)
                        .await?;
                        holders.extend(
                            found
                                .into_iter()
                                .map(|(key, id)| ((queue.to_owned(), key), id)),
                        );
                    }
                    resolve(rows, &written, &holders)
                })
            }
        }
    };
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use batch_enqueue;
