//! Takes a token before calling the inner service, waiting briefly or deferring.

use std::{
    task::{Context, Poll},
    time::Duration,
};

use futures::future::BoxFuture;
use tower::Service;

use super::RateLimitLayer;
use crate::{admin::unix_secs_f64, backend::TokenGrant, layers::outcome::Deferred, BoxError};

/// How long a message waits when its bucket does not exist.
const MISSING_BUCKET_DEFER: Duration = Duration::from_secs(60);
/// How long a message waits when taking a token failed.
const STORE_ERROR_DEFER: Duration = Duration::from_secs(5);

/// Starts the inner service only with a token from the shared bucket.
#[derive(Clone)]
pub struct RateLimitService<S> {
    pub(super) inner: S,
    pub(super) layer: RateLimitLayer,
}

impl<S, Req> Service<Req> for RateLimitService<S>
where
    S: Service<Req, Error = BoxError> + Clone + Send + 'static,
    S::Future: Send + 'static,
    Req: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // The instance that was polled ready is the one that must be called.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let layer = self.layer.clone();
        Box::pin(async move {
            loop {
                let now = layer.clock.now();
                let defer = |wait: Duration, reason: String| -> BoxError {
                    Box::new(Deferred {
                        until: now + wait,
                        reason,
                    })
                };
                match layer
                    .store
                    .take_token(&layer.bucket, unix_secs_f64(now))
                    .await
                {
                    Ok(TokenGrant::Granted) => return inner.call(req).await,
                    Ok(TokenGrant::Wait(wait)) if wait <= layer.max_inline_wait => {
                        tokio::time::sleep(wait).await
                    }
                    Ok(TokenGrant::Wait(wait)) => {
                        return Err(defer(
                            wait,
                            format!("rate bucket `{}` has no token for {wait:?}", layer.bucket),
                        ))
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
        })
    }
}
