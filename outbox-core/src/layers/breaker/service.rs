//! Holds a worker while its breaker is open, lets one probe through, and turns "down"
//! failures into waiting instead of spent attempts.

use std::{
    task::{Context, Poll},
    time::{Duration, Instant},
};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tower::Service;

use super::{
    state::{Ticket, Verdict},
    BreakerEvent, BreakerLayer, REMINDER_EVERY,
};
use crate::{
    clock::Due,
    handler::HandlerErrorKind,
    layers::outcome::{AttemptFailed, Completion, Deferred, Rescheduled, Stop},
    store::{Claimed, ProbeFailure, ProbeGrant},
};

/// Not ready while the breaker is open (unless this process holds its probe); records
/// what each attempt says about the downstream.
#[derive(Clone)]
pub struct BreakerService<S> {
    pub(super) inner: S,
    pub(super) layer: BreakerLayer,
}

impl<S> Service<Task<Claimed>> for BreakerService<S>
where
    S: Service<Task<Claimed>, Response = Completion, Error = Stop>,
    S::Future: Send + 'static,
{
    type Response = Completion;
    type Error = Stop;
    type Future = BoxFuture<'static, Result<Completion, Stop>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Stop>> {
        if !self.layer.switch.admits(cx.waker()) {
            return Poll::Pending;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, task: Task<Claimed>) -> Self::Future {
        let ticket = self.layer.switch.with(|l| l.enter(Instant::now()));
        if ticket == Ticket::Held {
            // Opened between the readiness check and this call: back unchanged.
            let deferred = Deferred {
                until: None,
                reason: format!("circuit breaker `{}` is open", self.layer.switch.name()),
            };
            return Box::pin(std::future::ready(Err(Stop::Deferred(deferred))));
        }
        let last_attempt = task.args.attempt >= task.args.max_attempts;
        let fut = self.inner.call(task);
        let layer = self.layer.clone();
        Box::pin(async move {
            let result = fut.await;
            layer.after(ticket, last_attempt, result).await
        })
    }
}

impl BreakerLayer {
    /// What the attempt of `ticket` says about the downstream, recorded; the result to
    /// pass on.
    async fn after(
        &self,
        ticket: Ticket,
        last_attempt: bool,
        result: Result<Completion, Stop>,
    ) -> Result<Completion, Stop> {
        let error = match result {
            Ok(done) => {
                self.answered(ticket).await;
                return Ok(done);
            }
            Err(error) => error,
        };
        let down = match &error {
            // Stopped before the downstream (no rate-limit token), or failed by the worker
            // (an undecodable payload, a panic, a time limit): the downstream did not
            // answer, and a probe is still to be made.
            Stop::Deferred(_)
            | Stop::Failed(AttemptFailed {
                from_handler: false,
                ..
            }) => {
                self.switch.with(|l| l.not_attempted(ticket));
                return Err(error);
            }
            // Unshaped, a destination's outage is the downstream's.
            Stop::Failed(f)
                if matches!(
                    f.kind,
                    HandlerErrorKind::Down | HandlerErrorKind::DestinationDown
                ) =>
            {
                Some(f.reason.clone())
            }
            Stop::Failed(_) | Stop::Rescheduled(_) | Stop::GivenUp(_) => None,
        };
        let Some(reason) = down else {
            // The downstream answered (a failure about this message is an answer too).
            self.answered(ticket).await;
            return Err(error);
        };
        let config = self.switch.config();
        let verdict = self.switch.with(|l| {
            let verdict = l.down(ticket, config.failure_threshold(), Instant::now());
            if verdict == Verdict::Opened {
                // Until the row says so too, reads of it must not close it again here.
                l.writing();
            }
            verdict
        });
        match verdict {
            Verdict::Counted => {
                // Not an outage yet: an ordinary failed attempt, tried again soon.
                return Err(Stop::Failed(AttemptFailed {
                    kind: HandlerErrorKind::RetryAfter(config.first_probe()),
                    reason,
                    from_handler: true,
                }));
            }
            Verdict::Suspected => {
                // Failures in a row, but not for long enough to call it an outage (a flaky
                // server drops a few concurrent attempts at once): tried again after the
                // first probe delay, without using an attempt.
                return Err(Stop::Rescheduled(Rescheduled {
                    due: Due::After(config.first_probe()),
                    reason: format!("{reason} (the downstream may be down)"),
                    give_back_attempt: true,
                }));
            }
            Verdict::Opened => self.opened(&reason).await,
            Verdict::AlreadyOpen => {}
            Verdict::ProbeFailed(grant) => self.probe_failed(grant, &reason).await,
        }
        // Waits behind the breaker, due now (behind the messages already waiting), and
        // never given up for the outage: its last attempt is given back.
        Err(Stop::Rescheduled(Rescheduled {
            due: Due::After(Duration::ZERO),
            reason: format!(
                "{reason} (waiting for circuit breaker `{}`)",
                self.switch.name()
            ),
            give_back_attempt: last_attempt,
        }))
    }

    /// The downstream answered the message of `ticket`: a probe's answer closes the
    /// breaker, here and for every process.
    async fn answered(&self, ticket: Ticket) {
        let Some(opened) = self.switch.with(|l| {
            let opened = l.opened();
            let closed = l.answered(ticket);
            if closed {
                l.writing();
            }
            closed.then_some(opened)
        }) else {
            return;
        };
        self.switch.notify(BreakerEvent::Released);
        let name = self.switch.name();
        let closed = self
            .store
            .close_breaker(name, self.clock.database_now())
            .await;
        self.switch.with(|l| l.written());
        match closed {
            Ok(true) => tracing::info!(
                breaker = name, types = %self.switch.types().join(", "),
                open_for = ?opened.map(|at| at.elapsed()),
                "circuit breaker closed: a probe got through; waiting messages start now"
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!(
                breaker = name, error = %e,
                "cannot record that the circuit breaker closed; other processes see it at its next probe"
            ),
        }
    }

    /// This process found the downstream down and opened the breaker: record it for every
    /// process; the one whose write opened it says so at WARN.
    async fn opened(&self, reason: &str) {
        self.switch.notify(BreakerEvent::Held);
        let config = self.switch.config();
        let name = self.switch.name();
        let opened = self
            .store
            .open_breaker(
                name,
                reason,
                self.clock.database_now(),
                config.first_probe(),
            )
            .await;
        self.switch.with(|l| l.written());
        match opened {
            Ok(true) => tracing::warn!(
                breaker = name, types = %self.switch.types().join(", "), reason,
                first_probe_in = ?config.first_probe(),
                "circuit breaker opened: the downstream is down; its messages wait without using \
                 attempts while one probe at a time tests it"
            ),
            Ok(false) => tracing::debug!(breaker = name, "circuit breaker was open already"),
            Err(e) => tracing::warn!(
                breaker = name, error = %e, reason,
                "the downstream is down, and the circuit breaker cannot be recorded in the \
                 database; every process keeps trying and opens it again after three \
                 failures in a row"
            ),
        }
    }

    /// This process's probe failed: the next one waits longer; at most one WARN a minute
    /// (across processes) says the downstream is still down.
    async fn probe_failed(&self, grant: ProbeGrant, reason: &str) {
        self.switch.notify(BreakerEvent::Held);
        let failed = grant.probes_failed.saturating_add(1);
        let next_in = self.switch.config().probe_delay(failed);
        let warned = grant.since_warned >= REMINDER_EVERY;
        let name = self.switch.name();
        let failure = ProbeFailure {
            reason,
            next_in,
            warned,
        };
        if let Err(e) = self
            .store
            .probe_failed(name, &self.owner, failure, self.clock.database_now())
            .await
        {
            tracing::debug!(breaker = name, error = %e, "cannot record a failed probe");
        }
        let open_for = self.switch.with(|l| l.opened()).map(|at| at.elapsed());
        if warned {
            tracing::warn!(
                breaker = name, types = %self.switch.types().join(", "), reason,
                probes_failed = failed, open_for = ?open_for, next_probe_in = ?next_in,
                "circuit breaker still open: the downstream is still down"
            );
        } else {
            tracing::debug!(
                breaker = name, reason, probes_failed = failed, next_probe_in = ?next_in,
                "circuit breaker probe failed"
            );
        }
    }
}
