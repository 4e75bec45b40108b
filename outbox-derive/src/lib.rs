//! `#[derive(OutboxMessage)]` for the `outbox` crate.
//!
//! The derive runs in phases, one module each: `attr` parses the input and its `#[outbox(...)]`
//! attributes into the model of `ast`, `valid` checks it and `expand` generates
//! the `impl OutboxMessage`.

#![warn(missing_docs)]

mod ast;
mod attr;
mod expand;
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
