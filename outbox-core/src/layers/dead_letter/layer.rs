//! The layer that records given-up messages.

use tower::Layer;

use super::DeadLetterService;
use crate::counters::Tally;

/// Adds [`DeadLetterService`] around a service.
#[derive(Clone)]
pub struct DeadLetterLayer {
    pub(crate) type_tag: &'static str,
    pub(crate) counters: Tally,
}

impl DeadLetterLayer {
    /// Records the given-up messages of `type_tag`.
    pub fn new(type_tag: &'static str) -> Self {
        Self {
            type_tag,
            counters: Tally::default(),
        }
    }
}

impl<S> Layer<S> for DeadLetterLayer {
    type Service = DeadLetterService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        DeadLetterService {
            inner,
            layer: self.clone(),
        }
    }
}
