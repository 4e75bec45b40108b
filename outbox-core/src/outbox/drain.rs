//! `drain`: deliver everything that is due, then return — for cron-style deployments
//! ("run the mail worker every minute").

use std::time::{Duration, Instant};

use super::{groups, run::Prepared, Outbox, Start};
use crate::{
    counters::DeliveryCounts,
    error::Error,
    store::{Backend, UnregisteredType},
};

/// How often a drain checks whether anything is left, besides when a worker says its
/// backlog ran dry and it holds nothing.
const CHECK_EVERY: Duration = Duration::from_millis(25);

/// What a drain did.
#[derive(Debug, Clone, Default)]
pub struct DrainReport {
    /// Handler outcomes during the drain.
    pub counts: DeliveryCounts,
    /// Pending messages of types this outbox has no handler for (left untouched unless
    /// [`Outbox::fail_unregistered_types`] is on).
    pub unregistered: Vec<UnregisteredType>,
    /// Wall time of the drain.
    pub elapsed: Duration,
}

/// How far a [`Outbox::drain_with`] goes.
///
/// ```
/// # use outbox_core::DrainOptions;
/// let cron = DrainOptions::until_limited(); // send what the rate limits allow now, then exit
/// # let _ = cron;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainOptions {
    limited: bool,
}

impl DrainOptions {
    /// Until nothing is due (what [`Outbox::drain`] does): a type whose bucket gives a
    /// token within its `max_inline_wait` is waited for.
    pub fn new() -> Self {
        Self::default()
    }

    /// Until the work left waits only for rate-limit tokens, for its due time or behind an
    /// open circuit breaker: a message
    /// whose bucket has no token now goes back in line (keeping its place) and the drain
    /// ends as soon as nothing else is due. For a cron entry point under a slow limit
    /// ("at most 60 mails per hour"): each run sends what the limit allows and exits within
    /// about a second. Overlapping runs are safe: the buckets are shared through the
    /// database, so together they never exceed the limit, and each message is claimed by
    /// one of them.
    pub fn until_limited() -> Self {
        Self { limited: true }
    }
}

impl<B: Backend, S: Send + Sync + 'static> Outbox<B, S> {
    /// Delivers every message of the registered types that is due now, then stops the
    /// workers and returns (a [`DrainOptions::new`] drain). A failed attempt's retry is due later (its schedule), so it
    /// waits for the next drain.
    ///
    /// Messages scheduled for later (delayed, retries not yet due) stay queued for the
    /// next drain, and so do messages whose rate bucket has no token for longer than
    /// their type's `max_inline_wait` (they keep their place in line). The drain ends when
    /// no message of a registered, unpaused type is due and none is held by this drain's
    /// workers, not counting types whose bucket is empty for that long, nor types behind
    /// an open circuit breaker whose next probe is not due (their downstream is down: the
    /// next drain probes it again).
    pub async fn drain(&self) -> Result<DrainReport, Error> {
        self.drain_with(DrainOptions::new()).await
    }

    /// Delivers what `options` say: everything due ([`DrainOptions::new`], as
    /// [`Outbox::drain`]), or what the rate limits allow now
    /// ([`DrainOptions::until_limited`]); then stops the workers and returns.
    pub async fn drain_with(&self, options: DrainOptions) -> Result<DrainReport, Error> {
        let started = Instant::now();
        let before = self.counters.snapshot();
        let Prepared {
            tags: registered,
            steering,
        } = self.prepare().await?;
        let how = match options.limited {
            true => Start::DrainWhileTokens,
            false => Start::Drain,
        };
        let running = self.start(how, steering).await;
        let signals = &running.signals;
        // Beside the workers, after their first claim (it scans the queue).
        let unregistered = async {
            signals.after_first_claim().await;
            self.handle_unregistered(&registered).await
        };
        let outcome = async {
            // Expired leases come back after the first claims, and before the drain can
            // decide it is done (the heartbeat's first beat leaves this to the drain).
            signals.after_first_claim().await;
            let rescued = self
                .backend
                .rescue_expired(&registered, self.clock.database_now())
                .await?;
            if rescued > 0 {
                tracing::warn!(
                    rescued,
                    "re-queued messages whose worker's lease expired (a crashed or stopped process)"
                );
            }
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(CHECK_EVERY) => {}
                    _ = signals.quiet() => {}
                }
                let waiting = self.types_waiting_for_tokens(options.limited).await?;
                let types: Vec<&'static str> = registered
                    .iter()
                    .copied()
                    .filter(|t| !waiting.contains(t))
                    .filter(|t| {
                        // Behind an open breaker with no probe to run now: its downstream
                        // is down; the next drain tries again.
                        !running
                            .breakers
                            .get(t)
                            .is_some_and(|b| b.with(|l| l.wants_probe(Instant::now())))
                    })
                    .collect();
                if types.is_empty() {
                    return Ok::<(), Error>(());
                }
                let left = self
                    .backend
                    .count_unfinished(&types, running.names.prefix(), self.clock.database_now())
                    .await?;
                // A group that just finished enqueues its completion message: deliver it
                // in this drain too.
                if left == 0 && groups::fire_once(&self.backend, self.clock.as_ref()).await == 0 {
                    return Ok::<(), Error>(());
                }
            }
        };
        let (outcome, unregistered) = futures::future::join(outcome, unregistered).await;
        self.stop(running).await;
        outcome?;
        let unregistered = unregistered?;
        Ok(DrainReport {
            counts: self.counters.snapshot().since(before),
            unregistered,
            elapsed: started.elapsed(),
        })
    }
}

impl<B: Backend, S: Send + Sync + 'static> Outbox<B, S> {
    /// Types whose rate bucket will not grant a token within their inline wait (with
    /// `limited`: has no token now): a drain does not wait for them.
    async fn types_waiting_for_tokens(&self, limited: bool) -> Result<Vec<&'static str>, Error> {
        let mut waiting = Vec::new();
        for r in &self.registrations {
            let Some(bucket) = r.options.bucket() else {
                continue;
            };
            if let Some(state) = self
                .backend
                .bucket(bucket, self.clock.database_now())
                .await?
            {
                let patience = match limited {
                    true => Duration::ZERO,
                    false => r.options.inline_wait(),
                };
                if state.wait_for_token() > patience {
                    waiting.push(r.queue);
                }
            }
        }
        Ok(waiting)
    }
}
