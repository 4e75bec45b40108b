//! The queue of the shared SQL store: claims, settlements (with their fencing), the
//! workers' heartbeats and leases, rescue of expired leases, due types, pruning of done
//! rows, a drain's count and messages of unregistered types.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use futures::future::BoxFuture;

use super::{
    rows::{self, beat_json, claims_json, json, millis_ceil, SettlementGroups},
    transient_retries, write, write_if, Arg, Dialect, Queries, SqlRow, Statement,
};
use crate::{
    clock::Now,
    error::Error,
    store::{
        ClaimRequest, Claimed, Fenced, QueueStore, Settle, Settled, Settlement, UnregisteredType,
        WorkerBeat,
    },
};

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
