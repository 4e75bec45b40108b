//! The endpoints of message kinds from code: store, list, disable, enable, and the failure
//! clock a kind keeps for each.

use std::sync::Arc;

use crate::{
    clock::Clock,
    error::Error,
    store::{Backend, Endpoint},
};

/// The endpoints of one message kind (e.g. `webhook`), from any process on the database.
#[derive(Clone)]
pub struct Endpoints<B> {
    backend: B,
    clock: Arc<dyn Clock>,
    kind: String,
}

impl<B: Backend> Endpoints<B> {
    pub(crate) fn new(backend: B, clock: Arc<dyn Clock>, kind: &str) -> Self {
        Self {
            backend,
            clock,
            kind: kind.to_owned(),
        }
    }

    /// The kind these endpoints belong to.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Stores endpoint `name` with `settings` (the kind's JSON): a new one enabled, a known
    /// one keeps its state and takes the new settings.
    pub async fn put(&self, name: &str, settings: &str) -> Result<(), Error> {
        self.backend
            .put_endpoint(&self.kind, name, settings, self.clock.database_now())
            .await
    }

    /// Endpoint `name`, if stored.
    pub async fn get(&self, name: &str) -> Result<Option<Endpoint>, Error> {
        self.backend.endpoint(&self.kind, name).await
    }

    /// Every endpoint of the kind, by name.
    pub async fn list(&self) -> Result<Vec<Endpoint>, Error> {
        self.backend.endpoints(&self.kind).await
    }

    /// Disables endpoint `name` for `reason`; the endpoint after the change, `None` if it
    /// is not stored.
    pub async fn disable(&self, name: &str, reason: &str) -> Result<Option<Endpoint>, Error> {
        self.backend
            .disable_endpoint(&self.kind, name, reason, self.clock.database_now())
            .await
    }

    /// Enables endpoint `name` and restarts its failure clock; the endpoint after the
    /// change, `None` if it is not stored.
    pub async fn enable(&self, name: &str) -> Result<Option<Endpoint>, Error> {
        self.backend
            .enable_endpoint(&self.kind, name, self.clock.database_now())
            .await
    }

    /// Records that a delivery to `name` failed (its failure clock starts unless it runs)
    /// or went through (`failing = false`: the clock stops). For changes of health only.
    pub async fn health(&self, name: &str, failing: bool) -> Result<(), Error> {
        self.backend
            .endpoint_health(&self.kind, name, failing, self.clock.database_now())
            .await
    }

    /// Forgets endpoint `name`; false if it was not stored.
    pub async fn remove(&self, name: &str) -> Result<bool, Error> {
        self.backend.remove_endpoint(&self.kind, name).await
    }
}
