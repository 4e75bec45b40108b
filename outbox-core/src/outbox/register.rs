//! Registering handlers, orphan checks and rate buckets.

use std::{future::Future, sync::Arc};

use super::{Outbox, Registration};
use crate::{
    error::BoxError,
    handler::{HandlerFn, Registered},
    layers::orphan::{check::TypedOrphanCheck, Relevance},
    layers::rate_limit::RateLimit,
    message::OutboxMessage,
    store::Backend,
    worker::TypedHandler,
};

impl<B: Backend, S: Send + Sync + 'static> Outbox<B, S> {
    /// Delivers messages of type `M` with `handler`, with the outbox's default options:
    /// `async fn(M) -> Result<(), E>`, `async fn(M, MessageContext<S>) -> Result<(), E>`
    /// (for the message's id and attempt, or the state) or any [`Handler`](crate::Handler)
    /// ([`HandlerFn`]). `register::<M, _>(handler)`: the `_` is inferred.
    pub fn register<M, Args>(self, handler: impl HandlerFn<M, S, Args>) -> Self
    where
        M: OutboxMessage,
        Args: 'static,
    {
        let options = self.defaults.clone();
        self.register_with::<M, Args>(handler, options)
    }

    /// Delivers messages of type `M` with `handler` and per-type options
    /// ([`register`](Self::register) says what a handler may be).
    pub fn register_with<M, Args>(
        mut self,
        handler: impl HandlerFn<M, S, Args>,
        options: super::QueueOptions,
    ) -> Self
    where
        M: OutboxMessage,
        Args: 'static,
    {
        let handler = Registered::new(handler);
        if let Err(reason) = crate::message::validate_type_tag(M::TYPE) {
            self.problems
                .push(format!("`{}`: {reason}", std::any::type_name::<M>()));
        }
        if self.registrations.iter().any(|r| r.queue == M::TYPE) {
            self.problems.push(format!(
                "type tag `{}` is registered twice (last by `{}`); each type gets one handler",
                M::TYPE,
                std::any::type_name::<M>()
            ));
        }
        if let Err(reason) = options.check() {
            self.problems
                .push(format!("options of `{}`: {reason}", M::TYPE));
        }
        let typed =
            TypedHandler::<M, S, _>::new(handler, Arc::clone(&self.state), M::DEFAULTS.timeout);
        self.registrations.push(Registration {
            queue: M::TYPE,
            options,
            handler: Arc::new(typed),
            orphan_check: None,
            counters: Arc::default(),
            precheck: Arc::new(crate::message::precheck::<M>),
            recipient_of: M::HAS_RECIPIENT
                .then_some(crate::message::recipient_of::<M> as crate::worker::RecipientOf),
            destination_of: M::HAS_DESTINATION
                .then_some(crate::message::destination_of::<M> as crate::message::DestinationOf),
            ordered: M::ORDERED,
        });
        self
    }

    /// Before each message of type `M` (registered earlier), asks `check` whether the
    /// thing it is about still exists; an orphan is completed without its handler.
    ///
    /// `check` returns `Ok(true)`/`Ok(Relevance::Relevant)` to deliver, `Ok(false)` or
    /// `Ok(Relevance::Orphan(reason))` to drop. Name the message type on the closure's
    /// argument (`|mail: WelcomeMail, state| …`) and no turbofish is needed.
    pub fn orphan_check<M, F, Fut, R, E>(mut self, check: F) -> Self
    where
        M: OutboxMessage,
        F: Fn(M, Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Into<Relevance> + 'static,
        E: Into<BoxError> + 'static,
    {
        let state = Arc::clone(&self.state);
        match self.registrations.iter_mut().find(|r| r.queue == M::TYPE) {
            Some(r) => {
                r.orphan_check = Some(Arc::new(TypedOrphanCheck::<M, S, F>::new(check, state)))
            }
            None => self.problems.push(format!(
                "orphan_check for `{}` comes before its register call; register the handler first",
                M::TYPE
            )),
        }
        self
    }

    /// Shapes messages per receiving site (a destination such as a recipient domain or a
    /// webhook host, or the destinations a kind rolls up into one site): a token bucket and
    /// a cap on messages in flight per site, shared by every process, and rules that slow or
    /// suspend a site when its failures say "too fast" ([`Shaping`](crate::Shaping); the
    /// email kind ships defaults for the large mailbox providers). Applies to the types that
    /// name their destination ([`OutboxMessage::destination`]); the sites' limits and the
    /// rules are written to the database when the outbox starts. Bad sites or rules are
    /// reported when the outbox starts.
    pub fn shaping(mut self, shaping: crate::shaping::Shaping) -> Self {
        self.problems.extend(shaping.problems().iter().cloned());
        self.shaping = Some(shaping);
        self
    }

    /// Defines (or redefines) the shared rate bucket `name`; it is written to the
    /// database when the outbox starts. Types use it through [`QueueOptions::rate_limit`](super::QueueOptions::rate_limit).
    pub fn rate_limit(mut self, name: &str, limit: RateLimit) -> Self {
        if let Err(reason) = limit.check() {
            self.problems
                .push(format!("rate bucket `{name}`: {reason}"));
        }
        self.buckets.retain(|(n, _)| n != name);
        self.buckets.push((name.to_owned(), limit));
        self
    }
}
