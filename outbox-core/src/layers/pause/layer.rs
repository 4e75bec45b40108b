//! The layer that holds a worker while its type is paused.

use std::sync::Arc;

use tower::Layer;

use super::{PauseService, PauseSwitch};

/// Adds [`PauseService`] around a service.
#[derive(Clone)]
pub struct PauseLayer {
    pub(crate) switch: Arc<PauseSwitch>,
}

impl PauseLayer {
    /// Holds the service while `switch` is on.
    pub fn new(switch: Arc<PauseSwitch>) -> Self {
        Self { switch }
    }
}

impl<S> Layer<S> for PauseLayer {
    type Service = PauseService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PauseService {
            inner,
            switch: Arc::clone(&self.switch),
        }
    }
}
