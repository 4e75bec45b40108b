//! Handlers: the application's async functions that deliver one message each.
//!
//! A handler is any `async fn(message: M) -> Result<(), E>`, or
//! `async fn(message: M, ctx: MessageContext<S>) -> Result<(), E>` when it needs the
//! message's id, its attempt or the application state, where `E` converts into
//! [`HandlerError`] (any `std::error::Error`, `String` or `&str` does); or a type that
//! implements [`Handler`].
//! Returning `Ok` marks the message done. Returning an error fails the attempt: by default
//! it is retried; [`HandlerError::permanent`] gives up at once. A panic or a handler that
//! outlives the type's timeout is a failed attempt with that reason; it never kills the
//! worker.

pub(crate) mod context;
mod error;
mod invoke;

use std::{future::Future, marker::PhantomData};

use futures::future::BoxFuture;

pub use context::MessageContext;
pub use error::{HandlerError, HandlerErrorKind, DESTINATION_PROBE_MAX};
pub(crate) use invoke::{invoke, Interrupted};

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

    /// Why this handler, as configured, can never deliver `message` — a list email to a
    /// mailer without one-click unsubscribe — or `None` (the default) when it can. When
    /// the outbox starts, the oldest waiting messages of the type (up to
    /// [`START_CHECK_MESSAGES`](crate::START_CHECK_MESSAGES)) are asked about, and
    /// [`Outbox::run`](crate::Outbox::run) refuses to start when one is refused, with the
    /// reason: a mistake in the configuration shows at start, not as a campaign of
    /// failures. Only handlers whose [`refuses_some`](Handler::refuses_some) is true are
    /// asked. The handler must still cope with such a message at delivery (one enqueued
    /// after the start).
    fn refuses(&self, message: &M) -> Option<String> {
        let _ = message;
        None
    }

    /// True when [`refuses`](Handler::refuses) may refuse anything; false (the default)
    /// makes the start check read nothing.
    fn refuses_some(&self) -> bool {
        false
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

/// What `register` takes ([`Outbox::register`](crate::Outbox::register)): an async
/// function of the message alone (`async fn(M) -> Result<(), E>`), of the message and its
/// context (`async fn(M, MessageContext<S>) -> Result<(), E>`), or any [`Handler`]. `Args`
/// tells the two kinds of function apart; it is inferred (`register::<M, _>(deliver)`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler of `{M}` messages",
    label = "not `async fn({M}) -> Result<(), E>` nor `async fn({M}, MessageContext<{S}>) -> Result<(), E>`",
    note = "a handler takes the message first, and may take a `MessageContext<{S}>` second \
            (the message's id and attempt, and the outbox's state): \
            `async fn deliver(message: {M}) -> Result<(), HandlerError>` or \
            `async fn deliver(message: {M}, ctx: MessageContext<{S}>) -> Result<(), HandlerError>`",
    note = "its error converts into `HandlerError` (any `std::error::Error`, `String` or `&str` \
            does); a closure names its argument types: `|message: {M}| async move {{ .. }}`"
)]
pub trait HandlerFn<M, S, Args>: Send + Sync + 'static {
    /// Delivers one message.
    fn call(
        &self,
        message: M,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>>;

    /// The downstream it names for its circuit breaker ([`Handler::downstream`]).
    fn downstream(&self) -> Option<String>;

    /// Why it can never deliver `message` ([`Handler::refuses`]).
    fn refuses(&self, message: &M) -> Option<String>;

    /// Whether it may refuse anything ([`Handler::refuses_some`]).
    fn refuses_some(&self) -> bool;
}

/// [`HandlerFn`]'s `Args` for a [`Handler`] (an `async fn(M, MessageContext<S>)`).
#[doc(hidden)]
#[derive(Debug)]
pub enum WithContext {}

/// [`HandlerFn`]'s `Args` for an `async fn(M)`.
#[doc(hidden)]
#[derive(Debug)]
pub enum MessageAlone {}

impl<M, S, H: Handler<M, S>> HandlerFn<M, S, WithContext> for H {
    fn call(
        &self,
        message: M,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        Handler::call(self, message, ctx)
    }

    fn downstream(&self) -> Option<String> {
        Handler::downstream(self)
    }

    fn refuses(&self, message: &M) -> Option<String> {
        Handler::refuses(self, message)
    }

    fn refuses_some(&self) -> bool {
        Handler::refuses_some(self)
    }
}

impl<F, Fut, M, S, E> HandlerFn<M, S, MessageAlone> for F
where
    F: Fn(M) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<HandlerError>,
{
    fn call(
        &self,
        message: M,
        _ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let fut = (self)(message);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }

    fn downstream(&self) -> Option<String> {
        None
    }

    fn refuses(&self, _message: &M) -> Option<String> {
        None
    }

    fn refuses_some(&self) -> bool {
        false
    }
}

/// A [`HandlerFn`] as the [`Handler`] the workers run.
pub(crate) struct Registered<H, Args> {
    handler: H,
    _args: PhantomData<fn() -> Args>,
}

impl<H, Args> Registered<H, Args> {
    pub(crate) fn new(handler: H) -> Self {
        Self {
            handler,
            _args: PhantomData,
        }
    }
}

impl<M, S, H, Args> Handler<M, S> for Registered<H, Args>
where
    H: HandlerFn<M, S, Args>,
    Args: 'static,
{
    fn call(
        &self,
        message: M,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        self.handler.call(message, ctx)
    }

    fn downstream(&self) -> Option<String> {
        self.handler.downstream()
    }

    fn refuses(&self, message: &M) -> Option<String> {
        self.handler.refuses(message)
    }

    fn refuses_some(&self) -> bool {
        self.handler.refuses_some()
    }
}
