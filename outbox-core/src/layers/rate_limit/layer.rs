//! The layer that makes a worker take a token before each message.

use std::{sync::Arc, time::Duration};

use tower::Layer;

use super::RateLimitService;
use crate::{clock::Clock, store::RateBucketStore};

/// Adds [`RateLimitService`] (bucket `bucket`) around a service.
#[derive(Clone)]
pub struct RateLimitLayer {
    pub(crate) bucket: Arc<str>,
    pub(crate) store: Arc<dyn RateBucketStore>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) max_inline_wait: Duration,
}

impl RateLimitLayer {
    /// Takes tokens from the bucket named `bucket` through `store`.
    pub fn new(bucket: &str, store: Arc<dyn RateBucketStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            bucket: bucket.into(),
            store,
            clock,
            max_inline_wait: Duration::from_secs(1),
        }
    }

    /// The longest wait for a token spent holding the worker slot; longer waits
    /// reschedule the message instead.
    pub fn max_inline_wait(mut self, wait: Duration) -> Self {
        self.max_inline_wait = wait;
        self
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            layer: self.clone(),
            hold_until: Default::default(),
            hold: None,
        }
    }
}
