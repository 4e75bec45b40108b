//! The layer that checks a message before its token.

use std::sync::Arc;

use tower::Layer;

use super::PrecheckService;

/// A type's check of a stored payload: `Err` with the reason when the message can never
/// be delivered.
pub type Precheck = Arc<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

/// Adds [`PrecheckService`] around a service.
#[derive(Clone)]
pub struct PrecheckLayer {
    pub(super) check: Precheck,
}

impl PrecheckLayer {
    /// Runs `check` on each message's payload before the inner service; a refused message
    /// fails its attempt permanently (it goes to the dead letters). Cannot fail.
    pub fn new(check: Precheck) -> Self {
        Self { check }
    }
}

impl<S> Layer<S> for PrecheckLayer {
    type Service = PrecheckService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        PrecheckService {
            inner,
            layer: self.clone(),
        }
    }
}
