//! A poll strategy that wakes an idle worker on a fixed period.
//!
//! apalis parks an idle worker until its next heartbeat (30 s by default); this tick
//! bounds pick-up latency by the period instead. It re-arms a `tokio::time::Interval` on
//! every poll, which avoids the stalls measured with apalis' own interval strategy
//! (notes/apalis-1.0.md §0.7).

use std::{
    task::{Context, Poll},
    time::Duration,
};

use apalis_core::backend::ext::poll_strategy::{PollSnapshot, PollStrategy};
use tokio::time::{interval, Interval, MissedTickBehavior};

/// Wakes the worker every period.
#[derive(Debug)]
pub struct TickStrategy(Interval);

impl TickStrategy {
    /// A tick every `period` (at least 1 ms).
    pub fn every(period: Duration) -> Self {
        let mut tick = interval(period.max(Duration::from_millis(1)));
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Self(tick)
    }
}

impl PollStrategy for TickStrategy {
    fn poll_drive(&mut self, cx: &mut Context<'_>, _: &PollSnapshot) -> Poll<Option<()>> {
        let mut fired = false;
        while self.0.poll_tick(cx).is_ready() {
            fired = true;
        }
        if fired {
            Poll::Ready(Some(()))
        } else {
            Poll::Pending
        }
    }
}
