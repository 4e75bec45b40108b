//! The middleware every worker runs, as tower layers (one folder each: layer, service and
//! the value type they share). From the outside in:
//!
//! ```text
//! [settle] ▶ Retry ▶ Pause ▶ concurrency limit ▶ Precheck ▶ Orphan ▶ Breaker ▶ Shaping ▶ RateLimit ▶ Unboxed ▶ [apalis lifecycle ▶ decode, time limit, panic guard, handler]
//! ```
//!
//! * [`retry`] decides the next due time of a failed message, or gives it up (the worker's
//!   settle step hands a given-up message to the flusher, which moves it into the dead
//!   letters and logs the move);
//! * [`pause`] holds the worker while its type is paused in `outbox_paused`;
//! * [`precheck`] gives up, before a rate-limit token, a message that cannot decode or
//!   that its own `validate` refuses (rate-limited types only);
//! * [`orphan`] completes messages whose subject is gone, without the handler;
//! * [`breaker`] holds the worker while its downstream is down, but for one probe;
//! * [`shaping`] sends a message only when its recipient's site has room, and turns
//!   "too fast" replies into deferrals that slow or suspend the site;
//! * [`rate_limit`] takes a token from a bucket shared through the database;
//! * [`Unboxed`] takes the typed [`Stop`] back out of the error apalis boxed below.
//!
//! The layers decide; none of them writes the message's row. Their decisions travel up as
//! the service's result: a [`Completion`], or one [`Stop`] (rescheduled, deferred, given up,
//! or an [`AttemptFailed`] the retry layer has not decided yet), which every layer matches
//! on, to the worker's settle step, which hands them to a flusher that writes them in
//! batches, and counts each outcome once. [`OutboxLayers`] is the whole stack as
//! `Outbox::start` builds it, one constructor per layer.

pub mod breaker;
pub mod orphan;
mod outcome;
pub mod pause;
pub mod precheck;
pub mod rate_limit;
pub mod retry;
pub mod shaping;

use tower::{
    layer::util::Identity,
    limit::{ConcurrencyLimit, ConcurrencyLimitLayer},
    util::Either,
    Layer,
};

pub use outcome::{AttemptFailed, Completion, Deferred, Stop, Unboxed};

use breaker::{BreakerLayer, BreakerService};
use orphan::{OrphanLayer, OrphanService};
use pause::{PauseLayer, PauseService};
use precheck::{PrecheckLayer, PrecheckService};
use rate_limit::{RateLimitLayer, RateLimitService};
use retry::{RetryLayer, RetryService};
use shaping::{ShapingLayer, ShapingService};

/// The full stack of one message type's worker.
#[derive(Clone)]
pub struct OutboxLayers {
    retry: RetryLayer,
    pause: PauseLayer,
    concurrency: usize,
    precheck: Option<PrecheckLayer>,
    orphan: Option<OrphanLayer>,
    breaker: Option<BreakerLayer>,
    shaping: Option<ShapingLayer>,
    rate_limit: Option<RateLimitLayer>,
}

impl OutboxLayers {
    /// The stack from the outside in: `retry`, `pause`, at most `concurrency` calls in
    /// flight, then the optional `precheck`, `orphan` check, `breaker`, `shaping` and
    /// `rate_limit`, and innermost [`Unboxed`]. Cannot fail; a `concurrency` of 0 is refused
    /// when the options are registered.
    pub fn new(
        retry: RetryLayer,
        pause: PauseLayer,
        concurrency: usize,
        checks: (Option<PrecheckLayer>, Option<OrphanLayer>),
        limits: (
            Option<BreakerLayer>,
            Option<ShapingLayer>,
            Option<RateLimitLayer>,
        ),
    ) -> Self {
        let (precheck, orphan) = checks;
        let (breaker, shaping, rate_limit) = limits;
        Self {
            retry,
            pause,
            concurrency,
            precheck,
            orphan,
            breaker,
            shaping,
            rate_limit,
        }
    }
}

/// What the optional rate limit leaves around `S` (its error unboxed).
type MaybeRateLimited<S> = Either<RateLimitService<Unboxed<S>>, Unboxed<S>>;

/// What the optional shaping leaves around `S`.
type MaybeShaped<S> = Either<ShapingService<MaybeRateLimited<S>>, MaybeRateLimited<S>>;

/// What the optional breaker leaves around `S`.
type MaybeGuarded<S> = Either<BreakerService<MaybeShaped<S>>, MaybeShaped<S>>;

/// What the optional orphan check leaves around `S`.
type MaybeOrphanChecked<S> = Either<OrphanService<MaybeGuarded<S>>, MaybeGuarded<S>>;

/// What the optional precheck leaves around `S`.
type MaybePrechecked<S> = Either<PrecheckService<MaybeOrphanChecked<S>>, MaybeOrphanChecked<S>>;

/// The service [`OutboxLayers`] builds around `S`.
pub type OutboxService<S> = RetryService<PauseService<ConcurrencyLimit<MaybePrechecked<S>>>>;

impl<S> Layer<S> for OutboxLayers {
    type Service = OutboxService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let inner = Unboxed::new(inner);
        let limited = match &self.rate_limit {
            Some(l) => Either::Left(l.layer(inner)),
            None => Either::Right(Identity::new().layer(inner)),
        };
        let shaped = match &self.shaping {
            Some(l) => Either::Left(l.layer(limited)),
            None => Either::Right(limited),
        };
        let guarded = match &self.breaker {
            Some(l) => Either::Left(l.layer(shaped)),
            None => Either::Right(shaped),
        };
        let checked = match &self.orphan {
            Some(l) => Either::Left(l.layer(guarded)),
            None => Either::Right(guarded),
        };
        let checked = match &self.precheck {
            Some(l) => Either::Left(l.layer(checked)),
            None => Either::Right(checked),
        };
        let limited = ConcurrencyLimitLayer::new(self.concurrency).layer(checked);
        self.retry.layer(self.pause.layer(limited))
    }
}
