//! Per-destination traffic shaping: messages to one receiving site (a destination such as a
//! recipient domain or a webhook host, or the destinations a kind rolls up into one site)
//! go no faster than the site allows, and failures that say "too fast" slow or suspend that
//! site instead of using attempts.
//!
//! For each message of a type that names its destination
//! ([`OutboxMessage::destination`](crate::OutboxMessage::destination)), the layer finds the
//! destination's site ([`Shaping`](crate::Shaping): a configured route, the kind's resolver,
//! else the destination key) and, when the site has limits or a rule acted on it, asks the site's row in
//! `outbox_sites` for one more message — one transaction on the locked row, so every
//! process shares the site's token bucket and its cap on messages in flight:
//!
//! * **granted**: the message is sent; a capped site's slot is renewed while the send
//!   runs and freed when it ends (or when its lease runs out, if the process died). A
//!   message its type's rate limit then puts back gives its site the token back;
//! * **not now**: the message is deferred — not an attempt — to when the site has room.
//!   Messages deferred by one process are booked one token apart (at most 10 minutes
//!   ahead), so a slowed site's backlog does not come back all at once; the worker goes on
//!   with other sites' mail. The message first in the process's line for the site, or one
//!   back at its booking, waits in its slot for a token due within one gap of the site (at
//!   most a second, at most two messages per site), so no token comes due unasked and the
//!   site gets the rate it is given.
//!
//! When a message fails, its failure text (which holds the server's reply, code and
//! enhanced status code) is matched against the rules ([`ShapingRule`](crate::ShapingRule),
//! stored in `outbox_shaping_rules`, re-read every 5 s). A rule's match is counted for its
//! site; at its threshold the rule's action is written to the site's row (slow it to a rate
//! for a while, suspend it for a while) and every process follows within a second. A
//! message whose reply matched a slow or suspend rule is deferred, not charged an attempt,
//! and is never dead-lettered for it; a bounce rule at its threshold makes the failure
//! permanent. A permanent failure (a `5xx`) counts toward the rules and their actions but
//! keeps its own fate. Mail to sites without limits or actions in force goes at full speed,
//! with no database work. Ending a site's slowdown or suspension (`Admin::shaping().resume`)
//! lets new messages go within a second; those already deferred keep their due times.
//!
//! A handler that says its message's destination does not answer
//! ([`HandlerError::destination_down`](crate::HandlerError::destination_down): a refused
//! connection, a failed TLS handshake) suspends the site — a circuit breaker per
//! destination: 1 s first, doubling at each failed probe up to a minute, written to the
//! site's row so every process holds its messages; those messages wait without using
//! attempts, and the first message after a suspension is the probe. Any answer of the site
//! ends the outage (one WARN when it begins, one INFO when it ends).
//!
//! Failure modes: when the site's row cannot be read or written, the message is deferred
//! by 5 s (nothing is sent past a limit that could not be checked; once the sites were read,
//! a failed re-read keeps the last ones); a rule's match that
//! cannot be recorded still defers its message, and its action is tried again at the next
//! match. Site times are the workers' clocks (NTP keeps them together).

mod layer;
mod outage;
mod pacer;
mod service;
mod shaper;

pub use layer::ShapingLayer;
pub use service::ShapingService;
pub(crate) use shaper::Shaper;
