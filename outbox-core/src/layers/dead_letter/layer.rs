//! The layer that logs given-up messages.

use tower::Layer;

use super::DeadLetterService;

/// Adds [`DeadLetterService`] around a service.
#[derive(Clone)]
pub struct DeadLetterLayer {
    pub(super) type_tag: &'static str,
}

impl DeadLetterLayer {
    /// Notes the given-up messages of `type_tag` (the worker's flusher counts and logs
    /// their move once written). Cannot fail.
    pub fn new(type_tag: &'static str) -> Self {
        Self { type_tag }
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
