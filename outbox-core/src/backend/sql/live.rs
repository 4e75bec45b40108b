//! The live messages of the shared SQL store (queued and running): keyset pages, counts,
//! retry now and cancel, in batches.

use crate::store::{HeldBy, HeldKey};
use std::time::SystemTime;

use futures::future::BoxFuture;

use super::{
    delete_counting_groups,
    rows::{self, live_batch_args, live_filter_args},
    write, Arg, Dialect, SqlRow,
};
use crate::{
    clock::{unix_millis, Now},
    error::Error,
    store::{
        LiveFilter, LiveMessage, LiveMessageDetail, LiveMessageStore, LiveState, ReplayFilter,
        Waiting,
    },
};

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

    fn replay_done<'a>(
        &'a self,
        filter: &'a ReplayFilter,
        now: Now,
    ) -> BoxFuture<'a, Result<u64, Error>> {
        Box::pin(async move {
            let text = |v: &'a Option<String>| Arg::OptText(v.as_deref());
            let ms = |t: Option<SystemTime>| Arg::OptInt(t.map(unix_millis));
            // Each filter twice: whether it is set, and its value (every database's
            // statement reads its parameters in order).
            let args = [
                Arg::OptInt(self.now_ms(now)),
                text(&filter.id),
                text(&filter.id),
                text(&filter.type_tag),
                text(&filter.type_tag),
                text(&filter.group),
                text(&filter.group),
                ms(filter.done_after),
                ms(filter.done_after),
                ms(filter.done_before),
                ms(filter.done_before),
            ];
            let changed = write(self, &[(self.queries().replay_done, &args)]).await?;
            Ok(changed[0])
        })
    }

    fn held_keys<'a>(
        &'a self,
        type_tag: &'a str,
        limit: u32,
    ) -> BoxFuture<'a, Result<Vec<HeldKey>, Error>> {
        Box::pin(async move {
            let t = Arg::Text(type_tag);
            let args = [t, t, t, t, t, Arg::Int(i64::from(limit))];
            let rows = self
                .fetch(None, self.queries().live_held_keys, &args)
                .await?;
            let held = |r: &D::Row| -> Result<HeldKey, sqlx::Error> {
                Ok(HeldKey {
                    key: r.text(0)?,
                    message_id: r.text(1)?,
                    held_by: if r.text(2)? == "dead" {
                        HeldBy::Dead
                    } else {
                        HeldBy::Retrying
                    },
                    last_error: r.text(3)?,
                    waiting: u64::try_from(r.int(4)?).unwrap_or(0),
                })
            };
            Ok(rows.iter().map(held).collect::<Result<_, _>>()?)
        })
    }
}

/// Cancels in batches: in one write transaction per batch, `select` (with `args`) reads
/// up to a batch of queued messages with their groups, locking them; they are deleted and
/// counted as cancelled in their groups' rows. Ends when a batch finds none; returns how
/// many it deleted in all. A large cancel never holds one long transaction, and messages
/// claimed meanwhile are left to finish.
pub(super) async fn cancel_batches<D: Dialect>(
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
