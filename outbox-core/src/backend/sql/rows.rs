//! The plain logic between the port's records and the SQL statements' parameters and rows:
//! settlements grouped by kind into one JSON parameter each, dead-letter filters as
//! parameters, a dead letter and a claimed message from their columns, and the status
//! counts folded per type. Nothing here runs a statement.

use std::{collections::BTreeMap, time::Duration};

use serde::Serialize;

use super::{Arg, SqlRow};
use crate::{
    clock::{from_unix_millis, unix_millis, unix_millis_ceil},
    enqueue::MessageId,
    store::{
        Claimed, DeadLetter, DeadLetterFilter, Due, FailedAttempt, GroupProgress, LiveFilter,
        LiveMessage, LiveState, RateWindow, Settle, Settlement, TypeCounts, WorkerBeat,
    },
};

/// A settlement as the statements read it from their JSON parameter.
#[derive(Serialize)]
struct Row<'a> {
    id: &'a str,
    attempt: u32,
    claim: u32,
    /// Absolute due time (unix ms) of a retry at a chosen time.
    #[serde(skip_serializing_if = "Option::is_none")]
    due: Option<i64>,
    /// Delay (ms) after the settlement's `now` of any other retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    delay: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    give_back: Option<i64>,
}

impl<'a> Row<'a> {
    fn of(id: &'a MessageId, attempt: u32, claim: u32) -> Self {
        Row {
            id: id.as_str(),
            attempt,
            claim,
            due: None,
            delay: None,
            text: None,
            give_back: None,
        }
    }
}

/// `value` as JSON text, for a statement's JSON parameter.
pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> Result<String, sqlx::Error> {
    serde_json::to_string(value).map_err(|e| sqlx::Error::Encode(e.into()))
}

/// Whole milliseconds of `d`, rounded up (a delay is never shortened), saturating.
pub(crate) fn millis_ceil(d: Duration) -> i64 {
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    ms.saturating_add(i64::from(d.subsec_nanos() % 1_000_000 > 0))
}

/// The settlements of one batch by kind, each kind as the JSON parameter of its
/// statements (`None` when the batch has none of that kind).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SettlementGroups {
    /// Delivered, deleted.
    pub(crate) delete: Option<String>,
    /// Delivered, kept as done rows (retention).
    pub(crate) done: Option<String>,
    /// Back to the queue, due later.
    pub(crate) retry: Option<String>,
    /// Back to the queue unchanged.
    pub(crate) release: Option<String>,
    /// Moved to the dead letters.
    pub(crate) bury: Option<String>,
    /// Stopped by a suppression, kept as suppressed rows.
    pub(crate) suppressed: Option<String>,
    /// The delivered ones (deleted or kept) that belong to a group, counted in their
    /// groups' rows before they are applied.
    pub(crate) grouped_delivered: Option<String>,
}

impl SettlementGroups {
    /// Groups `settlements` by kind.
    pub(crate) fn of<'s>(
        settlements: impl IntoIterator<Item = &'s Settlement>,
    ) -> Result<Self, sqlx::Error> {
        let (mut delete, mut done, mut retry, mut release, mut bury) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut suppressed = Vec::new();
        let mut grouped_delivered = Vec::new();
        for s in settlements {
            let row = Row::of(&s.id, s.attempt, s.claim);
            if s.grouped && matches!(s.settle, Settle::Done { .. }) {
                grouped_delivered.push(Row::of(&s.id, s.attempt, s.claim));
            }
            match &s.settle {
                Settle::Done { keep: false, .. } => delete.push(row),
                Settle::Done { keep: true, note } => done.push(Row {
                    text: note.as_deref(),
                    ..row
                }),
                Settle::Retry {
                    due,
                    error,
                    give_back_attempt,
                } => {
                    let (due, delay) = match due {
                        Due::At(at) => (Some(unix_millis_ceil(*at)), None),
                        Due::After(d) => (None, Some(millis_ceil(*d))),
                    };
                    retry.push(Row {
                        due,
                        delay,
                        text: Some(error.as_str()),
                        give_back: Some(i64::from(*give_back_attempt)),
                        ..row
                    })
                }
                Settle::Release => release.push(row),
                Settle::Bury { reason } => bury.push(Row {
                    text: Some(reason.as_str()),
                    ..row
                }),
                Settle::Suppressed { reason } => suppressed.push(Row {
                    text: Some(reason.as_str()),
                    ..row
                }),
            }
        }
        let encode = |rows: Vec<Row<'_>>| -> Result<Option<String>, sqlx::Error> {
            if rows.is_empty() {
                Ok(None)
            } else {
                json(&rows).map(Some)
            }
        };
        Ok(Self {
            delete: encode(delete)?,
            done: encode(done)?,
            retry: encode(retry)?,
            release: encode(release)?,
            bury: encode(bury)?,
            suppressed: encode(suppressed)?,
            grouped_delivered: encode(grouped_delivered)?,
        })
    }
}

/// A settled claim as `settle_owned.sql` reads it from its JSON parameter.
#[derive(Serialize)]
struct ClaimRef<'a> {
    id: &'a str,
    claim: u32,
}

/// The messages and claims `settlements` name, as the JSON parameter of
/// `settle_owned.sql`: `[{"id","claim"}]`.
pub(crate) fn claims_json(settlements: &[Settlement]) -> Result<String, sqlx::Error> {
    let claims: Vec<ClaimRef<'_>> = settlements
        .iter()
        .map(|s| ClaimRef {
            id: s.id.as_str(),
            claim: s.claim,
        })
        .collect();
    json(&claims)
}

/// A worker as the registry statement reads it from its JSON parameter.
#[derive(Serialize)]
struct BeatWorker<'a> {
    name: &'a str,
    type_tag: &'a str,
}

/// A held message as the lease statement reads it from its JSON parameter.
#[derive(Serialize)]
struct BeatLease<'a> {
    id: &'a str,
    claim: u32,
    owner: &'a str,
    /// The worker's lease (ms).
    lease: i64,
}

/// A process's heartbeat as the JSON parameters of its two statements: the workers, and
/// the held messages (`None` when no worker holds any).
pub(crate) fn beat_json(beats: &[WorkerBeat<'_>]) -> Result<(String, Option<String>), sqlx::Error> {
    let workers: Vec<BeatWorker<'_>> = beats
        .iter()
        .map(|b| BeatWorker {
            name: b.owner,
            type_tag: b.type_tag,
        })
        .collect();
    let leases: Vec<BeatLease<'_>> = beats
        .iter()
        .flat_map(|b| {
            b.held.iter().map(move |h| BeatLease {
                id: h.id.as_str(),
                claim: h.claim,
                owner: b.owner,
                lease: millis_ceil(b.lease),
            })
        })
        .collect();
    let leases = if leases.is_empty() {
        None
    } else {
        Some(json(&leases)?)
    };
    Ok((json(&workers)?, leases))
}

/// The three optional dead-letter filter parameters, in every filter statement's order:
/// id, type, failed before (unix ms).
pub(crate) fn filter_args(f: &DeadLetterFilter) -> [Arg<'_>; 4] {
    [
        Arg::OptText(f.id.as_deref()),
        Arg::OptText(f.type_tag.as_deref()),
        Arg::OptInt(f.failed_before.map(unix_millis)),
        Arg::OptText(f.recipient.as_deref()),
    ]
}

/// The count a `SELECT count(*)` returned (0 without a row).
pub(crate) fn count<R: SqlRow>(rows: &[R]) -> Result<u64, sqlx::Error> {
    let n = rows.first().map(|r| r.int(0)).transpose()?;
    Ok(n.unwrap_or_default().max(0) as u64)
}

/// The live-message filter parameters, in every live statement's order: now (unix ms, or
/// NULL for the database's clock), id, type, state, key prefix, error text, group,
/// recipient.
pub(crate) fn live_filter_args(f: &LiveFilter, now: Option<i64>) -> [Arg<'_>; 8] {
    [
        Arg::OptInt(now),
        Arg::OptText(f.id.as_deref()),
        Arg::OptText(f.type_tag.as_deref()),
        Arg::OptText(f.state.map(LiveState::as_str)),
        Arg::OptText(f.key_prefix.as_deref()),
        Arg::OptText(f.error_contains.as_deref()),
        Arg::OptText(f.group.as_deref()),
        Arg::OptText(f.recipient.as_deref()),
    ]
}

/// The live-message filter parameters and the batch size: the parameters of the statements
/// that change a batch of live messages (retry now, cancel).
pub(crate) fn live_batch_args(f: &LiveFilter, now: Option<i64>, batch: u32) -> [Arg<'_>; 9] {
    let [now, id, type_tag, state, prefix, error, group, recipient] = live_filter_args(f, now);
    let batch = Arg::Int(i64::from(batch.max(1)));
    [
        now, id, type_tag, state, prefix, error, group, recipient, batch,
    ]
}

/// The column of `live_list.sql` holding the payload (NULL unless asked for).
pub(crate) const LIVE_PAYLOAD: usize = 14;

/// A live message from the columns of `live_list.sql`: id, type, state, group,
/// attempts, max attempts, priority, due at, enqueued at, key, last error, attempt log,
/// lease owner, lease expires at (then the payload, read apart).
pub(crate) fn live_message<R: SqlRow>(row: &R) -> Result<LiveMessage, sqlx::Error> {
    let state = row.text(2)?;
    let state = LiveState::parse(&state).ok_or_else(|| {
        sqlx::Error::Decode(format!("unknown live message state `{state}`").into())
    })?;
    Ok(LiveMessage {
        id: MessageId::from_string(row.text(0)?),
        type_tag: row.text(1)?,
        state,
        group: row.opt_text(3)?,
        attempts: clamp_u32(row.int(4)?),
        max_attempts: clamp_u32(row.int(5)?),
        priority: row.int(6)?.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        due_at: from_unix_millis(row.int(7)?),
        enqueued_at: from_unix_millis(row.int(8)?),
        idempotency_key: row.opt_text(9)?,
        last_error: row.opt_text(10)?,
        attempt_log: FailedAttempt::parse_log(row.opt_text(11)?.as_deref()),
        lease_owner: row.opt_text(12)?,
        lease_expires_at: row.opt_int(13)?.map(from_unix_millis),
    })
}

/// Clamps a stored integer into `u32` (counts and attempts are never negative).
fn clamp_u32(v: i64) -> u32 {
    v.clamp(0, i64::from(u32::MAX)) as u32
}

/// A claimed message from the columns every claim returns: id, payload, attempts,
/// max attempts, priority, due (unix ms), claims, group. `counted` says whether the attempt and
/// claim columns already include this claim (an `UPDATE … RETURNING`) or were read before
/// it (a locking read followed by the update).
// PostgreSQL reads its claimed rows typed (`claimed_from`); SQLite and MariaDB use this.
#[cfg_attr(not(any(feature = "sqlite", feature = "mysql")), allow(dead_code))]
pub(crate) fn claimed<R: SqlRow>(row: &R, counted: bool) -> Result<Claimed, sqlx::Error> {
    let this = i64::from(!counted);
    Ok(claimed_from(ClaimColumns {
        id: row.text(0)?,
        payload: row.bytes(1)?,
        attempt: row.int(2)? + this,
        max_attempts: row.int(3)?,
        priority: row.int(4)?,
        due_at: row.int(5)?,
        claim: row.int(6)? + this,
        group: row.opt_text(7)?,
        enqueued_at: row.int(8)?,
    }))
}

/// The columns of a claimed row, as stored (counts already including this claim).
pub(crate) struct ClaimColumns {
    pub(crate) id: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) attempt: i64,
    pub(crate) max_attempts: i64,
    pub(crate) priority: i64,
    pub(crate) due_at: i64,
    pub(crate) claim: i64,
    pub(crate) group: Option<String>,
    pub(crate) enqueued_at: i64,
}

/// A claimed message from its stored columns.
pub(crate) fn claimed_from(c: ClaimColumns) -> Claimed {
    Claimed {
        id: MessageId::from_string(c.id),
        payload: c.payload,
        attempt: clamp_u32(c.attempt),
        max_attempts: clamp_u32(c.max_attempts),
        priority: c.priority.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        due_at: from_unix_millis(c.due_at),
        claim: clamp_u32(c.claim),
        group: c.group,
        enqueued_at: from_unix_millis(c.enqueued_at),
    }
}

/// A dead letter from the columns of `dead_letters_list.sql`: id, type, payload,
/// attempts, max attempts, key, last error, enqueued at, failed at, attempt log.
pub(crate) fn dead_letter<R: SqlRow>(row: &R) -> Result<DeadLetter, sqlx::Error> {
    Ok(DeadLetter {
        id: MessageId::from_string(row.text(0)?),
        type_tag: row.text(1)?,
        payload: row.bytes(2)?,
        attempts: clamp_u32(row.int(3)?),
        max_attempts: clamp_u32(row.int(4)?),
        idempotency_key: row.opt_text(5)?,
        last_error: row.text(6)?,
        enqueued_at: row.opt_int(7)?.map(from_unix_millis),
        failed_at: from_unix_millis(row.int(8)?),
        attempt_log: FailedAttempt::parse_log(row.opt_text(9)?.as_deref()),
    })
}

/// A group's progress from the columns of `groups_list.sql`: name, pending, scheduled,
/// running, retrying, paused, dead, delivered, cancelled, paused at, pause reason, first
/// and last delivery, rate window (opened at, delivered, previous rate), hook type,
/// completed at, the read's now (unix ms), and suppressed.
pub(crate) fn group_progress<R: SqlRow>(row: &R) -> Result<GroupProgress, sqlx::Error> {
    let n = |i| row.int(i).map(|v| v.max(0) as u64);
    let at = |i| row.opt_int(i).map(|v| v.map(from_unix_millis));
    let now = from_unix_millis(row.int(18)?);
    let rate = match (at(13)?, at(12)?) {
        (Some(opened_at), Some(last_delivered_at)) => RateWindow {
            opened_at,
            delivered: n(14)?,
            previous: row.opt_real(15)?,
            last_delivered_at,
        }
        .per_second(now),
        _ => 0.0,
    };
    let mut progress = GroupProgress {
        name: row.text(0)?,
        pending: n(1)?,
        scheduled: n(2)?,
        running: n(3)?,
        retrying: n(4)?,
        paused: n(5)?,
        dead: n(6)?,
        delivered: n(7)?,
        cancelled: n(8)?,
        suppressed: n(19)?,
        paused_at: at(9)?,
        pause_reason: row.opt_text(10)?,
        first_delivered_at: at(11)?,
        last_delivered_at: at(12)?,
        rate,
        hook: row.opt_text(16)?,
        completed_at: at(17)?,
    };
    // A finished group sends nothing more: no rate (and so no ETA).
    if progress.remaining() == 0 {
        progress.rate = 0.0;
    }
    Ok(progress)
}

/// Folds the rows of `status_counts.sql` (type, pending, scheduled, running, retrying,
/// done, dead, oldest due, paused, suppressed) into one [`TypeCounts`] per type, by type tag: the queue and
/// the dead letters each give a row per type.
pub(crate) fn fold_counts<R: SqlRow>(rows: &[R]) -> Result<Vec<TypeCounts>, sqlx::Error> {
    let mut by_type: BTreeMap<String, TypeCounts> = BTreeMap::new();
    for row in rows {
        let type_tag = row.text(0)?;
        let c = by_type
            .entry(type_tag.clone())
            .or_insert_with(|| TypeCounts {
                type_tag,
                ..TypeCounts::default()
            });
        let n = |i| row.int(i).map(|v| v.max(0) as u64);
        c.pending += n(1)?;
        c.scheduled += n(2)?;
        c.running += n(3)?;
        c.retrying += n(4)?;
        c.done += n(5)?;
        c.dead += n(6)?;
        if let Some(ms) = row.opt_int(7)? {
            let t = from_unix_millis(ms);
            c.oldest_due = Some(c.oldest_due.map_or(t, |o| o.min(t)));
        }
        c.paused += n(8)?;
        c.suppressed += n(9)?;
    }
    Ok(by_type.into_values().collect())
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn settlement(id: &str, settle: Settle) -> Settlement {
        Settlement {
            id: MessageId::from_string(id.to_owned()),
            attempt: 2,
            claim: 3,
            settle,
            grouped: false,
        }
    }

    #[test]
    fn settlements_are_grouped_by_kind_with_due_or_delay() {
        let groups = SettlementGroups::of(&[
            settlement(
                "a",
                Settle::Done {
                    keep: false,
                    note: None,
                },
            ),
            settlement(
                "b",
                Settle::Retry {
                    due: Due::After(Duration::from_micros(1_500)),
                    error: "e".into(),
                    give_back_attempt: false,
                },
            ),
            settlement(
                "c",
                Settle::Retry {
                    due: Due::At(UNIX_EPOCH + Duration::from_millis(7)),
                    error: "f".into(),
                    give_back_attempt: true,
                },
            ),
            settlement(
                "d",
                Settle::Bury {
                    reason: "gone".into(),
                },
            ),
        ])
        .unwrap();
        assert_eq!(
            groups.delete.as_deref(),
            Some(r#"[{"id":"a","attempt":2,"claim":3}]"#)
        );
        assert_eq!(groups.done, None);
        assert_eq!(groups.release, None);
        assert_eq!(
            groups.retry.as_deref(),
            Some(
                r#"[{"id":"b","attempt":2,"claim":3,"delay":2,"text":"e","give_back":0},{"id":"c","attempt":2,"claim":3,"due":7,"text":"f","give_back":1}]"#
            )
        );
        assert_eq!(
            groups.bury.as_deref(),
            Some(r#"[{"id":"d","attempt":2,"claim":3,"text":"gone"}]"#)
        );
    }

    #[test]
    fn delays_round_up_and_saturate() {
        assert_eq!(millis_ceil(Duration::from_millis(5)), 5);
        assert_eq!(millis_ceil(Duration::from_nanos(5_000_001)), 6);
        assert_eq!(millis_ceil(Duration::MAX), i64::MAX);
    }
}
