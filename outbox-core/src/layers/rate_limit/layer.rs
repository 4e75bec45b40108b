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
    /// The type whose messages take the tokens, for the wait metric.
    pub(crate) type_tag: &'static str,
}

impl RateLimitLayer {
    /// Takes tokens from the bucket named `bucket` through `store`.
    pub fn new(bucket: &str, store: Arc<dyn RateBucketStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            bucket: bucket.into(),
            store,
            clock,
            max_inline_wait: Duration::from_secs(1),
            type_tag: "",
        }
    }

    /// Counts one wait for a token in the `metrics` counter.
    pub(crate) fn count_wait(&self) {
        metrics::counter!(
            crate::counters::names::RATE_LIMIT_WAITS,
            "type" => self.type_tag,
            "bucket" => self.bucket.to_string()
        )
        .increment(1);
    }

    /// Labels the wait metric with `type_tag`.
    pub(crate) fn for_type(mut self, type_tag: &'static str) -> Self {
        self.type_tag = type_tag;
        self
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
