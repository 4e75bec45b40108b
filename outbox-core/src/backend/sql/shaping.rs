//! Traffic shaping in the shared SQL store: a site's grant is decided on its locked row
//! (the pure [`SiteState::decide`]), at the time read with the row (the database's clock
//! for [`Now::Database`]), so processes asking at once take turns and never overspend its
//! tokens or its slots.

use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;

use super::{from_unix_secs, transient_retries, unix_secs, write, Arg, Dialect, Queries, SqlRow};
use crate::{
    clock::Now,
    error::Error,
    shaping::MAX_SHAPING_DURATION,
    store::{
        RuleAction, ShapingRule, ShapingStore, SiteAnswer, SiteDecision, SiteLimit, SiteState,
        SitesInForce,
    },
};

/// How long after its actions ended a site a rule created is kept.
const RULE_SITE_KEPT: Duration = Duration::from_secs(86_400);

/// The column of `site_lock.sql` and `sites_in_force.sql` that holds the time of the read
/// (unix s): the database's clock, unless a time was bound.
const READ_AT: usize = 11;

impl<D: Dialect> ShapingStore for D {
    fn configure_sites<'a>(
        &'a self,
        sites: &'a [(String, SiteLimit)],
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = self.now_secs(now);
            let args: Vec<[Arg<'_>; 6]> = sites
                .iter()
                .map(|(site, limit)| {
                    [
                        Arg::Text(site),
                        Arg::OptReal(limit.per_second),
                        Arg::Real(limit.burst),
                        Arg::OptInt(limit.max_concurrent.map(i64::from)),
                        Arg::Real(limit.burst),
                        Arg::OptReal(now),
                    ]
                })
                .collect();
            let day = [Arg::OptReal(now), Arg::Real(RULE_SITE_KEPT.as_secs_f64())];
            let year = [
                Arg::OptReal(now),
                Arg::Real(MAX_SHAPING_DURATION.as_secs_f64()),
            ];
            // Pruned before the limits are dropped: a site that leaves the configuration
            // now keeps its row until the next start.
            let mut statements = vec![
                (q.sites_prune, &day[..]),
                (q.site_hits_prune, &year[..]),
                (q.sites_unconfigure, &[][..]),
            ];
            statements.extend(args.iter().map(|a| (q.site_configure, &a[..])));
            write(self, &statements).await?;
            Ok(())
        })
    }

    fn sites(&self, now: Now) -> BoxFuture<'_, Result<Vec<SiteState>, Error>> {
        Box::pin(async move {
            let args = [Arg::OptReal(self.now_secs(now))];
            let rows = self.fetch(None, self.queries().sites_list, &args).await?;
            let sites = rows.iter().map(|r| {
                let mut s = site_state(r)?;
                s.in_flight = u32::try_from(r.int(11)?.max(0)).unwrap_or(u32::MAX);
                Ok(s)
            });
            Ok(sites.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn sites_in_force(&self, now: Now) -> BoxFuture<'_, Result<SitesInForce, Error>> {
        Box::pin(async move {
            let args = [Arg::OptReal(self.now_secs(now))];
            let rows = self
                .fetch(None, self.queries().sites_in_force, &args)
                .await?;
            // Always one row at least: the time, with NULL site columns when none is in
            // force.
            let first = rows.first().ok_or(sqlx::Error::RowNotFound)?;
            let read_at = from_unix_secs(first.real(READ_AT)?);
            let mut sites = Vec::with_capacity(rows.len());
            for r in &rows {
                if r.opt_text(0)?.is_some() {
                    sites.push(site_state(r)?);
                }
            }
            Ok(SitesInForce { read_at, sites })
        })
    }

    fn take_site<'a>(
        &'a self,
        site: &'a str,
        holder: &'a str,
        now: Now,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<SiteAnswer>, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let lock = [Arg::OptReal(self.now_secs(now)), Arg::Text(site)];
            let lock = &lock;
            transient_retries::<D, _, _, _>(|| async move {
                let mut tx = self.begin_write().await?;
                if !q.site_soft_commit.is_empty() {
                    self.execute(Some(&mut tx), q.site_soft_commit, &[]).await?;
                }
                let rows = self.fetch(Some(&mut tx), q.site_lock, lock).await?;
                let Some(row) = rows.first() else {
                    D::rollback(tx).await?;
                    return Ok(None);
                };
                let state = site_state(row)?;
                // The time the row was read at (the database's clock, unless one was
                // given): the whole decision runs at it.
                let secs = row.real(READ_AT)?;
                let at = from_unix_secs(secs);
                let mut in_flight = 0;
                if state.limit.max_concurrent.is_some() {
                    let live = [Arg::Text(site), Arg::Real(secs)];
                    let count = self.fetch(Some(&mut tx), q.site_slots_count, &live).await?;
                    let live = count.first().map(|r| r.int(0)).transpose()?.unwrap_or(0);
                    in_flight = u32::try_from(live.max(0)).unwrap_or(u32::MAX);
                }
                let decision = state.decide(at, in_flight);
                let SiteDecision::Granted {
                    tokens,
                    token,
                    slot,
                } = decision
                else {
                    D::commit(tx).await?;
                    return Ok(Some(SiteAnswer { decision, at }));
                };
                if token {
                    let as_of = unix_secs(at.max(state.updated_at));
                    let spend = [Arg::Real(tokens), Arg::Real(as_of), Arg::Text(site)];
                    self.execute(Some(&mut tx), q.site_spend, &spend).await?;
                }
                if slot {
                    let take = [
                        Arg::Text(site),
                        Arg::Text(holder),
                        Arg::OptReal(Some(secs)),
                        Arg::Real(lease.as_secs_f64()),
                    ];
                    self.execute(Some(&mut tx), q.site_slot_take, &take).await?;
                }
                D::commit(tx).await?;
                Ok(Some(SiteAnswer { decision, at }))
            })
            .await
        })
    }

    fn release_site<'a>(
        &'a self,
        site: &'a str,
        holder: &'a str,
        refund: bool,
        now: Now,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let q = self.queries();
            let args = [
                Arg::Text(site),
                Arg::Text(holder),
                Arg::OptReal(self.now_secs(now)),
            ];
            let refund_args = [Arg::Text(site)];
            let mut statements = Vec::with_capacity(3);
            if !q.site_soft_commit.is_empty() {
                statements.push((q.site_soft_commit, &[][..]));
            }
            statements.push((q.site_slot_release, &args[..]));
            if refund {
                statements.push((q.site_refund, &refund_args[..]));
            }
            write(self, &statements).await?;
            Ok(())
        })
    }

    fn renew_site<'a>(
        &'a self,
        site: &'a str,
        holder: &'a str,
        now: Now,
        lease: Duration,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let q = self.queries();
            let args = [
                Arg::Text(site),
                Arg::Text(holder),
                Arg::OptReal(self.now_secs(now)),
                Arg::Real(lease.as_secs_f64()),
            ];
            let mut statements = Vec::with_capacity(2);
            if !q.site_soft_commit.is_empty() {
                statements.push((q.site_soft_commit, &[][..]));
            }
            statements.push((q.site_slot_take, &args[..]));
            write(self, &statements).await?;
            Ok(())
        })
    }

    fn record_hit<'a>(
        &'a self,
        site: &'a str,
        rule: &'a str,
        now: Now,
        window: Duration,
    ) -> BoxFuture<'a, Result<u32, Error>> {
        Box::pin(async move {
            let q = self.queries();
            let now = Arg::OptReal(self.now_secs(now));
            let hit = [Arg::Text(site), Arg::Text(rule), now];
            let recent = [
                Arg::Text(site),
                Arg::Text(rule),
                now,
                Arg::Real(window.as_secs_f64()),
            ];
            write(self, &[(q.site_hit, &hit), (q.site_hits_forget, &recent)]).await?;
            let rows = self.fetch(None, q.site_hits_count, &recent).await?;
            let count = rows.first().map(|r| r.int(0)).transpose()?.unwrap_or(1);
            Ok(u32::try_from(count.max(1)).unwrap_or(u32::MAX))
        })
    }

    fn act_on_site<'a>(
        &'a self,
        site: &'a str,
        action: &'a RuleAction,
        reason: &'a str,
        now: Now,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let q = self.queries();
            if matches!(action, RuleAction::Bounce) {
                return Ok(false);
            }
            let now = self.now_secs(now);
            let ensure = [Arg::Text(site), Arg::OptReal(now)];
            let lock = [Arg::OptReal(now), Arg::Text(site)];
            let (ensure, lock) = (&ensure, &lock);
            transient_retries::<D, _, _, _>(|| async move {
                let mut tx = self.begin_write().await?;
                // Read under the row's lock: of processes acting at once, one finds the
                // site free (the news), the others find it held. The row is created only
                // when missing (MySQL: an insert on an existing row takes a shared lock that
                // two processes could not both upgrade).
                let mut rows = self.fetch(Some(&mut tx), q.site_lock, lock).await?;
                if rows.is_empty() {
                    self.execute(Some(&mut tx), q.site_ensure, ensure).await?;
                    rows = self.fetch(Some(&mut tx), q.site_lock, lock).await?;
                }
                let Some(row) = rows.first() else {
                    D::rollback(tx).await?;
                    return Ok(false);
                };
                let s = site_state(row)?;
                // The time the row was read at (the database's clock, unless one was
                // given): the action runs from it.
                let secs = row.real(READ_AT)?;
                let at = from_unix_secs(secs);
                let held = s.slowed_at(at) || s.suspended_at(at);
                if let Some((statement, args)) = action_statement(q, action, reason, site, secs) {
                    self.execute(Some(&mut tx), statement, &args).await?;
                }
                D::commit(tx).await?;
                Ok(!held)
            })
            .await
        })
    }

    fn resume_site<'a>(&'a self, site: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(site)];
            let q = self.queries();
            // Only whether the row exists matters, not the time it is read at.
            let lock = [Arg::OptReal(self.now_secs(Now::Database)), Arg::Text(site)];
            let rows = self.fetch(None, q.site_lock, &lock).await?;
            if rows.is_empty() {
                return Ok(false);
            }
            write(self, &[(q.site_resume, &args)]).await?;
            Ok(true)
        })
    }

    fn shaping_rules(&self) -> BoxFuture<'_, Result<Vec<Result<ShapingRule, String>>, Error>> {
        Box::pin(async move {
            let rows = self.fetch(None, self.queries().rules_list, &[]).await?;
            let rules = rows.iter().map(|r| {
                let name = r.text(0)?;
                let secs = |i| -> Result<Option<Duration>, sqlx::Error> {
                    Ok(r.opt_real(i)?
                        .and_then(|s| Duration::try_from_secs_f64(s.max(0.0)).ok()))
                };
                let duration = secs(5)?.unwrap_or_default();
                let action = match r.text(3)?.as_str() {
                    "slow" => RuleAction::Slow {
                        per_second: r.opt_real(4)?.unwrap_or(0.0),
                        duration,
                    },
                    "suspend" => RuleAction::Suspend { duration },
                    "bounce" => RuleAction::Bounce,
                    other => {
                        return Ok(Err(format!(
                            "rule `{name}`: unknown action {other:?} (slow, suspend or bounce)"
                        )))
                    }
                };
                let rule = ShapingRule {
                    name,
                    site: r.opt_text(1)?,
                    pattern: r.text(2)?,
                    action,
                    threshold: u32::try_from(r.int(6)?.max(0)).unwrap_or(u32::MAX),
                    window: secs(7)?.unwrap_or_default(),
                };
                // The pattern is compiled by whoever uses the rule, once.
                Ok(rule.check_fields().map(|()| rule))
            });
            Ok(rules.collect::<Result<_, sqlx::Error>>()?)
        })
    }

    fn put_rules<'a>(&'a self, rules: &'a [ShapingRule]) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(async move {
            let q = self.queries();
            let args: Vec<[Arg<'_>; 8]> = rules
                .iter()
                .map(|r| {
                    let (per_second, duration) = match r.action {
                        RuleAction::Slow {
                            per_second,
                            duration,
                        } => (Some(per_second), Some(duration.as_secs_f64())),
                        RuleAction::Suspend { duration } => (None, Some(duration.as_secs_f64())),
                        RuleAction::Bounce => (None, None),
                    };
                    [
                        Arg::Text(&r.name),
                        Arg::OptText(r.site.as_deref()),
                        Arg::Text(&r.pattern),
                        Arg::Text(r.action.kind()),
                        Arg::OptReal(per_second),
                        Arg::OptReal(duration),
                        Arg::Int(i64::from(r.threshold)),
                        Arg::Real(r.window.as_secs_f64()),
                    ]
                })
                .collect();
            let statements: Vec<_> = args.iter().map(|a| (q.rule_put, &a[..])).collect();
            if !statements.is_empty() {
                write(self, &statements).await?;
            }
            Ok(())
        })
    }

    fn remove_rule<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async move {
            let args = [Arg::Text(name)];
            let changed = write(self, &[(self.queries().rule_remove, &args)]).await?;
            Ok(changed[0] > 0)
        })
    }
}

/// The statement and parameters of `action` on `site`, from `secs` (unix s), saying why in
/// `reason`; `None` for a bounce, which changes nothing.
fn action_statement<'a>(
    q: &Queries,
    action: &RuleAction,
    reason: &'a str,
    site: &'a str,
    secs: f64,
) -> Option<(&'static str, Vec<Arg<'a>>)> {
    match *action {
        RuleAction::Slow {
            per_second,
            duration,
        } => Some((
            q.site_slow,
            vec![
                Arg::Real(secs),
                Arg::Real(secs),
                Arg::Real(secs),
                Arg::Real(per_second),
                Arg::Real(secs + duration.as_secs_f64()),
                Arg::Text(reason),
                Arg::Text(site),
            ],
        )),
        RuleAction::Suspend { duration } => Some((
            q.site_suspend,
            vec![
                Arg::Real(secs + duration.as_secs_f64()),
                Arg::Text(reason),
                Arg::Text(site),
            ],
        )),
        RuleAction::Bounce => None,
    }
}

/// A site's state from a row's columns 0..11: site, per_second, burst, max_concurrent,
/// tokens, updated_at, slow_per_second, slowed_until, suspended_until, reason, configured.
fn site_state<R: SqlRow>(r: &R) -> Result<SiteState, sqlx::Error> {
    let time =
        |i| -> Result<Option<SystemTime>, sqlx::Error> { Ok(r.opt_real(i)?.map(from_unix_secs)) };
    Ok(SiteState {
        site: r.text(0)?,
        limit: SiteLimit {
            per_second: r.opt_real(1)?,
            burst: r.real(2)?.max(1.0),
            max_concurrent: r
                .opt_int(3)?
                .map(|n| u32::try_from(n.max(1)).unwrap_or(u32::MAX)),
        },
        tokens: r.real(4)?,
        updated_at: from_unix_secs(r.real(5)?),
        slow_per_second: r.opt_real(6)?,
        slowed_until: time(7)?,
        suspended_until: time(8)?,
        reason: r.opt_text(9)?,
        configured: r.int(10)? != 0,
        in_flight: 0,
    })
}
