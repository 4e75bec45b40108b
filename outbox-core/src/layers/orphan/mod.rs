//! Orphan cleanup: drop a message whose subject is gone.
//!
//! Per type, an optional async check "is the thing this message is about still there?"
//! runs before the rate limit and the handler. When the registration behind a
//! confirmation mail was deleted, the check says so and the message is completed without
//! calling the handler (and without spending a rate-limit token): logged with the
//! reason, counted by the worker's settle step, and settled like a delivery (with history kept, the reason is recorded
//! with the done row). The model is Laravel's `DeleteWhenMissingModels`.
//!
//! Failure mode: a check that errors (its own database query failed) defers the message
//! by a minute, giving its attempt back, and logs the error.

pub(crate) mod check;
mod layer;
mod service;

pub use check::{OrphanCheck, Relevance};
pub use layer::OrphanLayer;
pub use service::OrphanService;
