//! One builder for every type's worker stack: the switches and shared state one start
//! makes (pause switches, circuit breakers, the process's shaper, the suppression list
//! handlers write to), and from them each registration's layers and dispatch.

use std::{collections::HashMap, sync::Arc, time::Duration};

use super::{breakers, Outbox, Registration, Start};
use crate::{
    handler::context::{EventLog, SuppressFn, SuppressionList},
    layers::{
        breaker::{BreakerLayer, BreakerSwitch},
        orphan::OrphanLayer,
        pause::{PauseLayer, PauseSwitch},
        precheck::PrecheckLayer,
        rate_limit::RateLimitLayer,
        retry::RetryLayer,
        shaping::{Shaper, ShapingLayer},
        OutboxLayers,
    },
    store::Backend,
    worker::{Dispatch, Hub},
};

/// What one start shares between its types' stacks.
pub(super) struct Stacks<B: Backend> {
    how: Start,
    hub: Arc<Hub<B>>,
    /// One pause switch per type.
    pub(super) pauses: HashMap<&'static str, Arc<PauseSwitch>>,
    /// Each type's circuit breaker (types with the breaker off have none).
    pub(super) breakers: HashMap<&'static str, Arc<BreakerSwitch>>,
    /// One shaper per process: every type's workers share its sites, rules and cache.
    shaper: Option<Arc<Shaper>>,
    /// Handlers' `MessageContext::suppress` writes to this outbox's list.
    suppressions: SuppressionList,
    /// Handlers' `MessageContext::record_receipt` hands receipts to this start's writer.
    events: EventLog,
    /// The name this process asks for breaker probes as.
    owner: Arc<str>,
}

impl<B: Backend> Stacks<B> {
    /// The switches and shared state of `outbox`'s registrations for a start as `how`,
    /// asking for probes as `owner`. Cannot fail.
    pub(super) fn new<S: Send + Sync + 'static>(
        outbox: &Outbox<B, S>,
        how: Start,
        hub: &Arc<Hub<B>>,
        owner: Arc<str>,
        events: EventLog,
    ) -> Self {
        let regs = &outbox.registrations;
        let pauses = regs
            .iter()
            .map(|r| (r.queue, Arc::new(PauseSwitch::default())))
            .collect();
        let breakers = breakers::switches(
            regs.iter()
                .filter_map(|r| {
                    let name = outbox.breaker_of(r)?;
                    Some((r.queue, name, r.options.breaker_config().clone()))
                })
                .collect(),
            hub,
        );
        let shaper = outbox.shaping.as_ref().map(|config| {
            Arc::new(Shaper::new(
                config.clone(),
                Arc::new(outbox.backend.clone()),
                Arc::clone(&outbox.clock),
            ))
        });
        Self {
            how,
            hub: Arc::clone(hub),
            pauses,
            breakers,
            shaper,
            suppressions: suppression_list(outbox),
            events,
            owner,
        }
    }

    /// The layers of registration `r`, from the outside in: retry, pause, its concurrency,
    /// then what it uses of precheck, orphan check, breaker, shaping and rate limit.
    pub(super) fn layers<S: Send + Sync + 'static>(
        &self,
        outbox: &Outbox<B, S>,
        r: &Registration,
    ) -> OutboxLayers {
        let (backend, clock) = (&outbox.backend, &outbox.clock);
        // Only a token is worth checking for: an unlimited type's handler decodes and
        // validates once.
        let precheck = r
            .options
            .bucket()
            .map(|_| PrecheckLayer::new(Arc::clone(&r.precheck)));
        let orphan = r
            .orphan_check
            .as_ref()
            .map(|c| OrphanLayer::new(Arc::clone(c)));
        let breaker = self.breakers.get(r.queue).map(|switch| {
            let store = Arc::new(backend.clone());
            BreakerLayer::new(
                Arc::clone(switch),
                store,
                Arc::clone(clock),
                Arc::clone(&self.owner),
            )
        });
        let shaping = self
            .shaper
            .as_ref()
            .zip(r.destination_of)
            .map(|(shaper, of)| {
                ShapingLayer::new(Arc::clone(shaper), of, outbox.settings_of(r).lease)
            });
        // A drain while tokens last waits for none: no token, back in line.
        let wait = match self.how {
            Start::DrainWhileTokens => Duration::ZERO,
            Start::Run | Start::Drain => r.options.inline_wait(),
        };
        let rate_limit = r.options.bucket().map(|bucket| {
            let store = Arc::new(backend.clone());
            RateLimitLayer::new(r.queue, bucket, store, Arc::clone(clock), wait)
        });
        OutboxLayers::new(
            RetryLayer::new(r.options.schedule().clone()),
            PauseLayer::new(Arc::clone(&self.pauses[r.queue])),
            r.options.concurrency_limit(),
            (precheck, orphan),
            (breaker, shaping, rate_limit),
        )
    }

    /// How registration `r`'s handler is called.
    pub(super) fn dispatch(&self, r: &Registration) -> Dispatch {
        Dispatch::new(
            r.queue,
            Arc::clone(&r.handler),
            Arc::clone(&self.hub.paused_groups),
            self.suppressions.clone(),
            self.events.clone(),
        )
    }
}

/// The suppression list handlers write to: this outbox's store, on the database's clock.
fn suppression_list<B: Backend, S>(outbox: &Outbox<B, S>) -> SuppressionList {
    let store = outbox.backend.clone();
    let clock = Arc::clone(&outbox.clock);
    let write: SuppressFn = Arc::new(move |entry| {
        let store = store.clone();
        let clock = Arc::clone(&clock);
        Box::pin(async move {
            store
                .add_suppressions(std::slice::from_ref(&entry), clock.database_now())
                .await
                .map(drop)
        })
    });
    SuppressionList(Some(write))
}
