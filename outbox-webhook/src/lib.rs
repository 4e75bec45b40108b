//! Outgoing webhooks as an outbox message kind: a JSON event for an endpoint, enqueued in
//! the application's transaction, delivered at least once with [Standard
//! Webhooks](https://www.standardwebhooks.com) signatures, never to an address the
//! application did not allow.
#![warn(missing_docs)]

pub mod client;
pub mod resolve;
pub mod signature;
pub mod ssrf;
pub mod verify;
