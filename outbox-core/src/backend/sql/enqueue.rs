//! The database-neutral half of a transactional enqueue: a message's parameters, a batch
//! as one JSON parameter (so every database runs one static statement per chunk, whatever
//! its size), and the one resolver that matches what the database wrote back to the input,
//! in order, looking up the holders of taken idempotency keys.

use std::collections::{HashMap, HashSet};

use futures::future::BoxFuture;
use serde::Serialize;

use super::rows::json;
use super::Arg;
use crate::{
    clock::{unix_millis_ceil, Due},
    enqueue::{Enqueued, MessageId, NewMessage, QueuedRow, SelectArg, SelectInsert},
};

/// A message's due time as the statements bind it: an absolute time (unix ms, rounded up:
/// never early) or a delay in ms after the statement's `now`. The statement reads `now` to
/// the millisecond (rounded, on PostgreSQL and MariaDB), so a delay gets one millisecond
/// more than its rounded-up length: a delayed message is never due before the enqueue
/// call's time plus its delay.
pub(crate) fn due_parts(due: Due) -> (Option<i64>, i64) {
    match due {
        Due::At(at) => (Some(unix_millis_ceil(at)), 0),
        Due::After(delay) if delay.is_zero() => (None, 0),
        Due::After(delay) => (None, super::rows::millis_ceil(delay).saturating_add(1)),
    }
}

/// One message's parameters in the order of every database's `enqueue_one.sql`: id, type,
/// payload, max attempts, due (unix ms or NULL), priority, idempotency key, now (unix ms,
/// NULL for the database's clock), delay (ms), group.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn one_args(m: &NewMessage, now: Option<i64>) -> [Arg<'_>; 10] {
    let (due, delay) = due_parts(m.due);
    [
        Arg::Text(m.id.as_str()),
        Arg::Text(m.queue),
        Arg::Bytes(&m.payload),
        Arg::Int(i64::from(m.max_attempts)),
        Arg::OptInt(due),
        Arg::Int(i64::from(m.priority)),
        Arg::OptText(m.idempotency_key.as_deref()),
        Arg::OptInt(now),
        Arg::Int(delay),
        Arg::OptText(m.group.as_deref()),
    ]
}

/// One row as the PostgreSQL and MySQL batch statements read it from their JSON parameter.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    queue: &'a str,
    /// The payload's JSON text (serde_json output is always UTF-8).
    job: &'a str,
    /// Absolute due time (unix ms); left out when the message is due after `delay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<i64>,
    /// Delay (ms) after the statement's `now`.
    delay: i64,
    priority: u16,
    max_attempts: u32,
    /// Left out when absent, so every database reads SQL NULL.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    /// The recipient's suppression probe, flattened (`a`, `d`, `s0`..`s3`, `u`).
    #[serde(flatten)]
    probe: Option<ProbeFields<'a>>,
    /// The ordering key.
    #[serde(skip_serializing_if = "Option::is_none")]
    o: Option<&'a str>,
}

/// A message's suppression probe as the enqueue statements read it: address, domain entry,
/// the four scopes (absent when unused) and whether unsubscribes count.
#[derive(Serialize)]
struct ProbeFields<'a> {
    a: &'a str,
    d: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    s0: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s1: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s2: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s3: Option<&'a str>,
    u: u8,
}

impl<'a> ProbeFields<'a> {
    fn of(m: &'a NewMessage) -> Option<Self> {
        let p = m.suppression.as_ref()?;
        let s = |i: usize| p.scopes[i].as_deref();
        Some(Self {
            a: &p.address,
            d: &p.domain,
            s0: s(0),
            s1: s(1),
            s2: s(2),
            s3: s(3),
            u: u8::from(p.honour_unsubscribe),
        })
    }
}

/// One row as a JSON array, in [`Row`]'s field order: read by position (SQLite), without
/// key names to write, parse and look up. A row with a suppression probe has its fields at
/// positions 9 to 15 (address, domain entry, four scopes, whether unsubscribes count); a
/// row with an ordering key has it at position 16 (positions 9 to 15 null when it has no
/// probe); a row with neither ends at position 8.
#[cfg(feature = "sqlite")]
struct RowArray<'a> {
    head: RowHead<'a>,
    probe: Option<ProbeFields<'a>>,
    order_key: Option<&'a str>,
}

#[cfg(feature = "sqlite")]
type RowHead<'a> = (
    &'a str,
    &'a str,
    &'a str,
    Option<i64>,
    i64,
    u16,
    u32,
    Option<&'a str>,
    Option<&'a str>,
);

#[cfg(feature = "sqlite")]
impl Serialize for RowArray<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let h = &self.head;
        let len = match (&self.probe, self.order_key) {
            (_, Some(_)) => 17,
            (Some(_), None) => 16,
            (None, None) => 9,
        };
        let mut seq = serializer.serialize_seq(Some(len))?;
        seq.serialize_element(h.0)?;
        seq.serialize_element(h.1)?;
        seq.serialize_element(h.2)?;
        seq.serialize_element(&h.3)?;
        seq.serialize_element(&h.4)?;
        seq.serialize_element(&h.5)?;
        seq.serialize_element(&h.6)?;
        seq.serialize_element(&h.7)?;
        seq.serialize_element(&h.8)?;
        if let Some(p) = &self.probe {
            seq.serialize_element(p.a)?;
            seq.serialize_element(p.d)?;
            seq.serialize_element(&p.s0)?;
            seq.serialize_element(&p.s1)?;
            seq.serialize_element(&p.s2)?;
            seq.serialize_element(&p.s3)?;
            seq.serialize_element(&p.u)?;
        } else if self.order_key.is_some() {
            for _ in 9..16 {
                seq.serialize_element(&None::<u8>)?;
            }
        }
        if let Some(key) = self.order_key {
            seq.serialize_element(key)?;
        }
        seq.end()
    }
}

fn payload_text(m: &NewMessage) -> Result<&str, sqlx::Error> {
    std::str::from_utf8(&m.payload).map_err(|e| sqlx::Error::Encode(e.into()))
}

/// The rows as a JSON array of objects (PostgreSQL and MySQL batch statements).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn encode_rows(rows: &[NewMessage]) -> Result<String, sqlx::Error> {
    let encoded = rows
        .iter()
        .map(|m| {
            let (due, delay) = due_parts(m.due);
            Ok(Row {
                id: m.id.as_str(),
                queue: m.queue,
                job: payload_text(m)?,
                due,
                delay,
                priority: m.priority,
                max_attempts: m.max_attempts,
                key: m.idempotency_key.as_deref(),
                group: m.group.as_deref(),
                probe: ProbeFields::of(m),
                o: m.order_key.as_deref(),
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    json(&encoded)
}

/// The rows as a JSON array of arrays (the SQLite batch statement).
#[cfg(feature = "sqlite")]
pub(crate) fn encode_row_arrays(rows: &[NewMessage]) -> Result<String, sqlx::Error> {
    let encoded = rows
        .iter()
        .map(|m| {
            let (due, delay) = due_parts(m.due);
            Ok(RowArray {
                head: (
                    m.id.as_str(),
                    m.queue,
                    payload_text(m)?,
                    due,
                    delay,
                    m.priority,
                    m.max_attempts,
                    m.idempotency_key.as_deref(),
                    m.group.as_deref(),
                ),
                probe: ProbeFields::of(m),
                order_key: m.order_key.as_deref(),
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    json(&encoded)
}

/// The ids of a batch as a JSON array (SQLite's `written_ids.sql`).
#[cfg(feature = "sqlite")]
pub(crate) fn ids_json(rows: &[NewMessage]) -> Result<String, sqlx::Error> {
    let ids: Vec<&str> = rows.iter().map(|m| m.id.as_str()).collect();
    json(&ids)
}

/// What an insert statement tells of the rows it wrote.
#[derive(Debug)]
pub(crate) enum Written {
    /// Every row (as many written as given: ids are fresh).
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    All,
    /// These ids; the others had a taken key.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    Ids(HashSet<String>),
    /// Rows without a key; whether a keyed row was written is known only by asking who
    /// holds its key (MySQL: a taken key is a no-op update).
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    Unkeyed,
}

/// A connection that can say which messages hold idempotency keys (`find_by_keys.sql`).
pub(crate) trait FindByKeys: Send {
    /// `(key, id)` of the messages of `queue` holding any of `keys` (a JSON array).
    fn find_by_keys<'a>(
        &'a mut self,
        queue: &'a str,
        keys: String,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, sqlx::Error>>;
}

/// One result per input row, in order: written, or a duplicate of the message holding its
/// key. The holders of the keys that `written` leaves open are looked up on `conn` (in the
/// caller's transaction, so a key taken earlier in it is found too).
pub(crate) async fn resolve<C: FindByKeys + ?Sized>(
    conn: &mut C,
    rows: &[NewMessage],
    written: Written,
) -> Result<Vec<Enqueued>, sqlx::Error> {
    let is_written = |m: &NewMessage| match &written {
        Written::All => true,
        Written::Ids(ids) => ids.contains(m.id.as_str()),
        Written::Unkeyed => m.idempotency_key.is_none(),
    };
    let mut open: HashMap<&'static str, Vec<&str>> = HashMap::new();
    for m in rows.iter().filter(|m| !is_written(m)) {
        if let Some(k) = &m.idempotency_key {
            open.entry(m.queue).or_default().push(k.as_str());
        }
    }
    let mut holders: HashMap<(&str, String), String> = HashMap::new();
    for (queue, keys) in open {
        let found = conn.find_by_keys(queue, json(&keys)?).await?;
        holders.extend(found.into_iter().map(|(key, id)| ((queue, key), id)));
    }
    rows.iter()
        .map(|m| {
            if is_written(m) {
                return Ok(Enqueued::New(m.id.clone()));
            }
            let holder = m
                .idempotency_key
                .as_ref()
                .and_then(|k| holders.get(&(m.queue, k.clone())));
            match holder {
                // MySQL: the key's holder is this very row, so it was written.
                Some(id) if id == m.id.as_str() => Ok(Enqueued::New(m.id.clone())),
                Some(id) => Ok(Enqueued::Duplicate {
                    existing: MessageId::from_string(id.clone()),
                }),
                None => Err(sqlx::Error::Protocol(format!(
                    "message {} was neither written nor found as a duplicate",
                    m.id
                ))),
            }
        })
        .collect()
}

/// The statement of an `INSERT … SELECT`: the backend's `template` with the application's
/// query in place of `{select}`. With `numbered` (PostgreSQL's `$n`), the template's own
/// placeholders are moved past the query's parameters; `?` placeholders (SQLite, MySQL)
/// follow the text's order, and the template binds its values after the query.
pub(crate) fn select_statement(
    template: &str,
    insert: &SelectInsert<'_>,
    numbered: bool,
) -> String {
    let mut sql = template.to_owned();
    if numbered {
        let shift = insert.select.args.len();
        // Highest first, so `$1` never rewrites the start of `$10`.
        for n in (1..=SELECT_TEMPLATE_ARGS).rev() {
            sql = sql.replace(&format!("${n}::"), &format!("${}::", n + shift));
        }
    }
    sql.replace("{select}", insert.select.sql)
}

/// How many parameters a select template binds after the query's.
const SELECT_TEMPLATE_ARGS: usize = 8;

/// The parameters of an `INSERT … SELECT`: the query's own, then the template's: id
/// prefix, type, max attempts, due (unix ms or NULL), delay (ms), priority, group, now
/// (unix ms, NULL for the database's clock).
pub(crate) fn select_args<'a>(insert: &'a SelectInsert<'a>, now: Option<i64>) -> Vec<Arg<'a>> {
    let mut args: Vec<Arg<'a>> = insert
        .select
        .args
        .iter()
        .map(|a| match a {
            SelectArg::Int(v) => Arg::Int(*v),
            SelectArg::Real(v) => Arg::Real(*v),
            SelectArg::Text(v) => Arg::Text(v),
            SelectArg::Null => Arg::OptText(None),
        })
        .collect();
    let (due, delay) = due_parts(insert.due);
    args.extend([
        Arg::Text(&insert.id_prefix),
        Arg::Text(insert.queue),
        Arg::Int(i64::from(insert.max_attempts)),
        Arg::OptInt(due),
        Arg::Int(delay),
        Arg::Int(i64::from(insert.priority)),
        Arg::OptText(insert.group.as_deref()),
        Arg::OptInt(now),
    ]);
    debug_assert_eq!(args.len(), insert.select.args.len() + SELECT_TEMPLATE_ARGS);
    args
}

/// One row of `testing_queued.sql`: id, payload, group, due time, priority, attempts, max
/// attempts, idempotency key, running (1/0).
pub(crate) fn queued_row<R: super::SqlRow>(r: &R) -> Result<QueuedRow, sqlx::Error> {
    let count = |i| {
        r.int(i)
            .map(|v| u32::try_from(v.max(0)).unwrap_or(u32::MAX))
    };
    Ok(QueuedRow {
        id: MessageId::from_string(r.text(0)?),
        payload: r.bytes(1)?,
        group: r.opt_text(2)?,
        due_at: crate::clock::from_unix_millis(r.int(3)?),
        priority: r.int(4)?,
        attempts: count(5)?,
        max_attempts: count(6)?,
        idempotency_key: r.opt_text(7)?,
        running: r.int(8)? != 0,
    })
}
