//! The records of circuit breakers: one row per downstream (an SMTP relay, an API) that
//! some handler reported down, shared by every process on the database.

use std::time::{Duration, SystemTime};

/// How often a running outbox reads the breakers: an open or closed breaker is seen by
/// every process within about this long.
pub const BREAKER_POLL: Duration = Duration::from_millis(200);

/// Where one breaker stands, as the database has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerState {
    /// The breaker's name: the downstream it guards (`smtp:mail.example.com:587`) or a
    /// message type.
    pub name: String,
    /// When it opened, while it is open; `None` while it is closed.
    pub opened_at: Option<SystemTime>,
    /// What the failure that opened it (or the last failed probe) said.
    pub reason: Option<String>,
    /// Probes that failed since it opened.
    pub probes_failed: u32,
    /// While open: how long until the next probe may start (zero when it may now).
    pub next_probe_in: Option<Duration>,
    /// A probe message is running now.
    pub probing: bool,
    /// When it last closed.
    pub closed_at: Option<SystemTime>,
    /// How many times it opened, ever.
    pub times_opened: u64,
}

impl BreakerState {
    /// True while the breaker is open (its messages wait).
    pub fn is_open(&self) -> bool {
        self.opened_at.is_some()
    }
}

/// The probe a process was given: it may start one message now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeGrant {
    /// Probes that failed before this one since the breaker opened.
    pub probes_failed: u32,
    /// Time since the last WARN about this breaker was logged (by any process).
    pub since_warned: Duration,
}

/// How a failed probe is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeFailure<'a> {
    /// Why it failed.
    pub reason: &'a str,
    /// When the next probe may start, from now.
    pub next_in: Duration,
    /// The failure is being logged at WARN now (the reminder while open).
    pub warned: bool,
}
