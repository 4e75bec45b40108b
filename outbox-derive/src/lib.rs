//! `#[derive(OutboxMessage)]` for the `outbox` crate.
//!
//! The derive runs in phases, one module each: `attr` parses the input and its `#[outbox(...)]`
//! attributes into the model of `ast`, `valid` checks it and `expand` generates
//! the `impl OutboxMessage`. `#[derive(PublishEvent)]` has the same phases in `publish`.

#![warn(missing_docs)]

mod ast;
mod attr;
mod expand;
mod publish;
mod valid;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

/// Implements `OutboxMessage` for a struct or enum.
///
/// Container attributes, all optional, in one or several `#[outbox(...)]`:
///
/// - `type = "registration.user_mail"`: the type tag; default: the type's name in snake_case.
/// - `key(field_a, field_b)`: the idempotency key, the fields' `Display` joined with `:`
///   (structs with named fields only).
/// - `key_fn = "path::to::function"`: the idempotency key returned by a
///   `fn(&Self) -> Option<String>`, for any shape; give either `key(...)` or `key_fn`.
/// - `validate = "path::to::function"`: `OutboxMessage::validate` delegates to a
///   `fn(&Self) -> Result<(), InvalidMessage>`; default: every message is accepted.
/// - `recipient = "path::to::function"`: the one recipient the suppression list checks, from
///   a `fn(&Self) -> Option<Recipient>` (sets `HAS_RECIPIENT`); default: none.
/// - `destination = "path::to::function"`: the key traffic shaping groups by (a host, a
///   domain), from a `fn(&Self) -> Option<String>` (sets `HAS_DESTINATION`); default: none.
/// - `ordered`: the type's messages may carry ordering keys (sets `ORDERED`; required before
///   enqueueing with `EnqueueOptions::order_key` or implementing `order_key`).
/// - `max_attempts = 5` (1 to 1000), `priority = 3` (0 to 65535),
///   `timeout = "30s"` (`ms`, `s`, `m`, `h`, or `"none"`), `max_payload = "4MiB"` (`B`,
///   `KiB`, `MiB`; the largest JSON payload accepted at enqueue): per-type defaults; each
///   one not given is taken from `MessageDefaults::DEFAULT`.
/// - `crate = "outbox_core"`: the path to the crate; default `::outbox`.
#[proc_macro_derive(OutboxMessage, attributes(outbox))]
pub fn derive_outbox_message(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}

/// Implements `outbox::publish::PublishEvent` (crate `outbox-publish`): the subject and the
/// ordering key an application type is published with, built from its fields.
///
/// ```rust,ignore
/// use outbox::publish::PublishEvent; // the trait and this derive
///
/// #[derive(serde::Serialize, PublishEvent)]
/// #[publish(subject = "orders.{id}.created", key = "{id}")]
/// struct OrderCreated { id: u64, total: i64 }
/// ```
///
/// Container attributes, in one or several `#[publish(...)]`:
///
/// - `subject = "orders.{id}.created"` (required): the subject (NATS) or routing key
///   (RabbitMQ). `{field}` is the `Display` of a field of a struct with named fields;
///   `{{` and `}}` are literal braces. A subject without placeholders suits any shape.
///   Checked at compile time: the literal text holds no whitespace, control character or
///   wildcard (`*`, `>`), leaves no `.`-separated token empty, and is at most 255 bytes; the
///   whole subject is checked again when the event is enqueued: a field whose `Display`
///   is empty or holds whitespace, a wildcard or a `.` that leaves a token empty is refused
///   there (`EnqueueError::InvalidMessage` on the field `subject`); any other `.` in a
///   field's value splits its token in two.
/// - `key = "{id}"`: the ordering key, same syntax: events with the same key are published
///   one at a time in enqueue order; default: none (`PublishEvent::key` returns `None`).
/// - `crate = "outbox_publish"`: the path to the crate; default `::outbox::publish` (the
///   `outbox` facade with its `publish` feature). Write `crate = "outbox_publish"` when
///   depending on `outbox-publish` alone.
///
/// Generic types are refused, as by `OutboxMessage`: implement the trait by hand there.
#[proc_macro_derive(PublishEvent, attributes(publish))]
pub fn derive_publish_event(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    publish::derive(&input).into()
}
