//! Circuit breakers: one outage of a downstream (an SMTP relay, an API) costs one probe
//! at a time, not an attempt per message.
//!
//! A handler says "the downstream is down" with
//! [`HandlerError::down`](crate::HandlerError::down) (the SMTP mailer does for refused
//! connections, TLS, EHLO and AUTH failures, dropped connections and `421` replies).
//! After [`Breaker::threshold`] such failures in a row (3 by default; the ones before
//! are ordinary failed attempts, tried again a second later) the breaker opens:
//!
//! * **every process** stops starting messages of the types it guards: the state is the
//!   row of `outbox_breakers`, which each running outbox reads every
//!   [`BREAKER_POLL`](crate::store::BREAKER_POLL) (0.2 s); the process that opened it
//!   stops at once and gives back the messages it had claimed but not started;
//! * **one probe message at a time**, across processes, tests the downstream: 1 s after
//!   it opened, then at doubling intervals up to 1 min ([`Breaker::probe_backoff`]);
//! * **waiting costs nothing**: messages behind an open breaker are not started, so no
//!   attempt is charged. The attempts that found the outage (at most one per message, as
//!   they were running when it opened) and the probes are charged, but an outage never
//!   gives a message up: its last attempt is given back instead;
//! * **when a probe gets an answer** (delivered, or any failure that is not "down") the
//!   breaker closes for every process and the waiting messages start at once, in their
//!   order: they are due already, nothing waits for a retry time.
//!
//! Logs: one WARN when it opens (with the reason), one INFO when it closes, and while it
//! stays open at most one WARN a minute across processes; the rest is DEBUG. The state is
//! in [`Admin::breakers`](crate::admin::Admin::breakers), `outbox admin status`, the web
//! overview and the `outbox_breaker_open` gauge.
//!
//! A breaker is named by the handler's [`downstream`](crate::Handler::downstream) (the
//! mailer names its relay, `smtp:host:port`, so every type sent through one relay shares
//! it), else by the message type; [`Breaker::named`] sets a name and [`Breaker::off`]
//! turns it off (then "down" is an ordinary retry).
//!
//! Failure modes: if the breaker cannot be written, the process that found the outage
//! holds its own messages and logs a WARN; a probe holder that dies loses the probe after
//! [`PROBE_LEASE`] (another process takes it). A handler that says "down" for one bad
//! message (not the downstream) keeps its breaker opening: say "down" only for failures
//! of the downstream itself.

mod config;
mod layer;
mod service;
mod state;
mod switch;

use std::time::Duration;

pub(crate) use config::check_name;
pub use config::Breaker;
pub use layer::BreakerLayer;
pub use service::BreakerService;
pub(crate) use state::Change;
pub use switch::{BreakerEvent, BreakerSwitch, OnBreakerEvent};

/// How long a process holds a breaker's probe before another may take it (if the holder
/// died or found nothing to send).
pub const PROBE_LEASE: Duration = Duration::from_secs(60);

/// At most one WARN this often, across processes, while a breaker stays open.
pub const REMINDER_EVERY: Duration = Duration::from_secs(60);
