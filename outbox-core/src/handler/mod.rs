//! Handlers: the application's async functions that deliver one message each.
//!
//! A handler is any `async fn(message: M, ctx: MessageContext<S>) -> Result<(), E>` where
//! `E` converts into [`HandlerError`] (any `std::error::Error`, `String` or `&str` does).
//! Returning `Ok` marks the message done. Returning an error fails the attempt: by default
//! it is retried; [`HandlerError::permanent`] gives up at once. A panic or a handler that
//! outlives the type's timeout is a failed attempt with that reason; it never kills the
//! worker.

mod context;
mod error;

use std::future::Future;

use futures::future::BoxFuture;

pub use context::MessageContext;
pub use error::{HandlerError, HandlerErrorKind};

/// An async function that delivers messages of type `M` with application state `S`.
pub trait Handler<M, S>: Send + Sync + 'static {
    /// Delivers one message.
    fn call(
        &self,
        message: M,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>>;

    /// The downstream this handler delivers to, as a circuit breaker's name (e.g.
    /// `smtp:mail.example.com:587`): types whose handlers name the same downstream share
    /// one breaker, so an outage found by one stops them all. `None` (the default) keys
    /// the breaker by the message type; [`QueueOptions::breaker`](crate::QueueOptions::breaker)
    /// overrides both.
    fn downstream(&self) -> Option<String> {
        None
    }
}

impl<F, Fut, M, S, E> Handler<M, S> for F
where
    F: Fn(M, MessageContext<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<HandlerError>,
{
    fn call(
        &self,
        message: M,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let fut = (self)(message, ctx);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}
