//! Takes a token before calling the inner service, waiting briefly or deferring.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use apalis_core::task::Task;
use futures::future::BoxFuture;
use tokio::time::{Instant, Sleep};
use tower::Service;

use super::{RateLimitLayer, GRANT_EVENT_TARGET};
use crate::{
    clock::{unix_secs_f64, Due},
    layers::outcome::{Deferred, Stop},
    store::{Claimed, TokenGrant},
};

/// How long a message waits when its bucket does not exist.
const MISSING_BUCKET_DEFER: Duration = Duration::from_secs(60);
/// How long a message waits when taking a token failed.
const STORE_ERROR_DEFER: Duration = Duration::from_secs(5);
/// Shortest hold after a deferral: long enough that the newer messages already started
/// find the worker held and go back in line behind the deferred one.
const MIN_HOLD: Duration = Duration::from_millis(20);
/// Longest time the worker stops fetching after a deferral before it asks the bucket
/// again (so a rate raised at runtime is seen within this).
const MAX_HOLD: Duration = Duration::from_secs(2);

/// Starts the inner service only with a token from the shared bucket.
///
/// After a deferral the service reports "not ready" until the next token is due (at most
/// 2 s), so the worker stops starting messages: the backlog stays queued in the
/// database, in order, instead of being claimed and put back row by row at every token.
pub struct RateLimitService<S> {
    pub(super) inner: S,
    pub(super) layer: RateLimitLayer,
    pub(super) hold_until: Arc<Mutex<Option<Instant>>>,
    pub(super) hold: Option<Pin<Box<Sleep>>>,
}

impl<S: Clone> Clone for RateLimitService<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
            hold_until: Arc::clone(&self.hold_until),
            hold: None,
        }
    }
}

impl<S> Service<Task<Claimed>> for RateLimitService<S>
where
    S: Service<Task<Claimed>, Error = Stop> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = Stop;
    type Future = BoxFuture<'static, Result<S::Response, Stop>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Stop>> {
        let until = *self.hold_until.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(until) = until {
            if Instant::now() < until {
                let sleep = self
                    .hold
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                if sleep.deadline() != until {
                    sleep.as_mut().reset(until);
                }
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            self.hold = None;
            *self.hold_until.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Task<Claimed>) -> Self::Future {
        // The instance that was polled ready is the one that must be called.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let layer = self.layer.clone();
        let hold_until = Arc::clone(&self.hold_until);
        // In line now, as the worker starts it: the oldest started asks first, however the
        // runtime orders the first polls of these futures.
        let place = layer.line.join(&req.args);
        Box::pin(async move {
            let token = {
                let _turn = place.turn().await;
                if held(&hold_until) {
                    // An older message found no token and holds the worker: this newer
                    // one goes back in line behind it instead of taking the next token.
                    Err(Stop::Deferred(Deferred {
                        until: None,
                        reason: format!(
                            "behind an older message waiting for a token of `{}`",
                            layer.bucket
                        ),
                    }))
                } else {
                    take_token(&layer, &hold_until).await
                }
            };
            match token {
                Ok(()) => inner.call(req).await,
                Err(deferred) => Err(deferred),
            }
        })
    }
}

/// True while a deferral holds the worker.
fn held(hold_until: &Mutex<Option<Instant>>) -> bool {
    hold_until
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_some_and(|until| Instant::now() < until)
}

/// Takes a token from the layer's bucket: `Ok` once granted (waiting for it when it is due
/// within the inline wait), else the deferral to return (and the worker held until a token
/// is near).
async fn take_token(
    layer: &RateLimitLayer,
    hold_until: &Mutex<Option<Instant>>,
) -> Result<(), Stop> {
    loop {
        let defer = |wait: Duration, reason: String| -> Stop {
            Stop::Deferred(Deferred {
                until: Some(Due::After(wait)),
                reason,
            })
        };
        match layer
            .store
            .take_token(&layer.bucket, layer.clock.database_now())
            .await
        {
            Ok(TokenGrant::Granted) => {
                // The bucket's own clock at the grant: what the bound is about.
                tracing::trace!(
                    target: GRANT_EVENT_TARGET,
                    bucket = %layer.bucket,
                    granted_at = unix_secs_f64(layer.clock.now()),
                    "rate token granted"
                );
                return Ok(());
            }
            Ok(TokenGrant::Wait(wait)) if wait <= layer.max_inline_wait => {
                layer.count_wait();
                tokio::time::sleep(wait).await
            }
            Ok(TokenGrant::Wait(wait)) => {
                layer.count_wait();
                *hold_until.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(Instant::now() + wait.clamp(MIN_HOLD, MAX_HOLD));
                // Back unchanged, keeping its place in line; the hold stops this
                // worker from starting more until a token is near.
                return Err(Stop::Deferred(Deferred {
                    until: None,
                    reason: format!("rate bucket `{}` has no token for {wait:?}", layer.bucket),
                }));
            }
            Ok(TokenGrant::NoSuchBucket) => {
                tracing::error!(
                    bucket = %layer.bucket,
                    "rate bucket does not exist; create it with Outbox::rate_limit or Admin::set_rate_limit"
                );
                return Err(defer(
                    MISSING_BUCKET_DEFER,
                    format!("rate bucket `{}` does not exist", layer.bucket),
                ));
            }
            Err(e) => {
                return Err(defer(
                    STORE_ERROR_DEFER,
                    format!("cannot take a token from `{}`: {e}", layer.bucket),
                ))
            }
        }
    }
}
