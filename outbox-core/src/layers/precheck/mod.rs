//! Checks before a token: a rate-limited type's messages are decoded and validated
//! before the rate limit, so a message that can never be delivered (its payload does not
//! decode, `OutboxMessage::validate` refuses it — an email without a valid recipient, say)
//! is given up without spending one of the bucket's tokens. A check has no side effect;
//! the handler's own decode runs again after the token.

mod layer;
mod service;

pub use layer::{Precheck, PrecheckLayer};
pub use service::PrecheckService;
