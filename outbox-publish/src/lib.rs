//! Publishing events to a message broker through the transactional outbox: an [`Event`]
//! is enqueued in the application's transaction like any message, and a relay publishes
//! it once that transaction has committed — to NATS JetStream (feature `nats`) or RabbitMQ
//! (feature `rabbitmq`) — and marks it done only when the broker confirmed it. Events that
//! share a key are published one at a time in enqueue order; an inbox on the consuming
//! side skips redeliveries, so a handler runs once per event.
#![warn(missing_docs)]

/// The type tag of published events.
pub const EVENT_TYPE: &str = "outbox.publish";

pub mod event;
pub mod inbox;

#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "rabbitmq")]
pub mod rabbitmq;

pub use event::{Event, Payload, PublishEvent, MAX_HEADERS, MAX_SUBJECT_LEN};
pub use inbox::{Handled, Inbox, InboxError, Received};
pub use outbox_derive::PublishEvent;
