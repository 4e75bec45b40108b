//! Outgoing webhooks as an outbox message kind: a JSON event for an endpoint, enqueued in
//! the application's transaction, delivered at least once with [Standard
//! Webhooks](https://www.standardwebhooks.com) signatures, never to an address the
//! application did not allow.
#![warn(missing_docs)]

/// The kind name of webhook endpoints in the outbox's endpoint table.
pub const KIND: &str = "webhook";

/// The type tag of webhook messages.
pub const WEBHOOK_TYPE: &str = "outbox.webhook";

pub mod classify;
pub mod deliver;
pub mod endpoint;
pub mod message;

pub mod client;
pub mod resolve;
pub mod signature;
pub mod ssrf;
pub mod verify;
pub mod view;

pub use classify::{classify, Verdict};
pub use client::{Failure, Response, WebhookClient, WebhookClientBuilder};
pub use deliver::{WebhookSender, DISABLE_AFTER};
pub use endpoint::{EndpointSettings, NewSecret, StoredSecret, WebhookEndpoint, WebhookEndpoints};
pub use message::Webhook;
pub use signature::{SigningKey, VerifyingKey};
pub use ssrf::{AddressPolicy, IpNet};
pub use view::WebhookView;
