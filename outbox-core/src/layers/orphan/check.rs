//! The check a type registers, and its verdict.

use std::{future::Future, marker::PhantomData, sync::Arc};

use futures::future::BoxFuture;

use crate::{error::BoxError, message::OutboxMessage};

/// Whether a message is still worth delivering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relevance {
    /// Deliver it.
    Relevant,
    /// Its subject is gone: complete it without calling the handler.
    Orphan(String),
}

impl From<bool> for Relevance {
    /// `true` = still relevant.
    fn from(relevant: bool) -> Self {
        if relevant {
            Relevance::Relevant
        } else {
            Relevance::Orphan("the orphan check found its subject gone".into())
        }
    }
}

/// A check over stored payloads, with the message type erased.
pub trait OrphanCheck: Send + Sync + 'static {
    /// Decides on the stored payload (JSON bytes).
    fn check(&self, payload: &[u8]) -> BoxFuture<'static, Result<Relevance, BoxError>>;
}

/// A typed check: `Fn(M, Arc<S>) -> Future<Output = Result<R, E>>`.
pub(crate) struct TypedOrphanCheck<M, S, F> {
    check: F,
    state: Arc<S>,
    _message: PhantomData<fn() -> M>,
}

impl<M, S, F> TypedOrphanCheck<M, S, F> {
    pub(crate) fn new(check: F, state: Arc<S>) -> Self {
        Self {
            check,
            state,
            _message: PhantomData,
        }
    }
}

impl<M, S, F, Fut, R, E> OrphanCheck for TypedOrphanCheck<M, S, F>
where
    M: OutboxMessage,
    S: Send + Sync + 'static,
    F: Fn(M, Arc<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Into<Relevance>,
    E: Into<BoxError>,
{
    fn check(&self, payload: &[u8]) -> BoxFuture<'static, Result<Relevance, BoxError>> {
        match serde_json::from_slice::<M>(payload) {
            // Undecodable payloads are left for the handler path, which gives them up.
            Err(_) => Box::pin(async { Ok(Relevance::Relevant) }),
            Ok(message) => {
                let fut = (self.check)(message, Arc::clone(&self.state));
                Box::pin(async move { fut.await.map(Into::into).map_err(Into::into) })
            }
        }
    }
}
