//! The layer that makes a worker take a token before each message.

use std::{sync::Arc, time::Duration};

use tower::Layer;

use super::{line::Line, RateLimitService};
use crate::{clock::Clock, store::RateBucketStore};

/// Adds [`RateLimitService`] (bucket `bucket`) around a service.
#[derive(Clone)]
pub struct RateLimitLayer {
    pub(super) bucket: Arc<str>,
    pub(super) store: Arc<dyn RateBucketStore>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) max_inline_wait: Duration,
    /// The type whose messages take the tokens, for the wait metric.
    type_tag: &'static str,
    /// One message at a time asks for a token, the oldest started first (claim order).
    pub(super) line: Arc<Line>,
}

impl RateLimitLayer {
    /// Takes a token for each message of `type_tag` from the bucket named `bucket` through
    /// `store`, reading the time from `clock`; a token due within `max_inline_wait` is
    /// waited for in the worker slot, a later one defers the message. Cannot fail here: a
    /// missing bucket or a store error defers the messages (see the module docs).
    pub fn new(
        type_tag: &'static str,
        bucket: &str,
        store: Arc<dyn RateBucketStore>,
        clock: Arc<dyn Clock>,
        max_inline_wait: Duration,
    ) -> Self {
        Self {
            bucket: bucket.into(),
            store,
            clock,
            max_inline_wait,
            type_tag,
            line: Arc::default(),
        }
    }

    /// Counts one wait for a token in the `metrics` counter.
    pub(super) fn count_wait(&self) {
        metrics::counter!(
            crate::counters::names::RATE_LIMIT_WAITS,
            "type" => self.type_tag,
            "bucket" => self.bucket.to_string()
        )
        .increment(1);
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
