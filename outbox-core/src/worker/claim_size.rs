//! How many messages a worker claims at a time.
//!
//! The first claim asks for no more than the type's concurrency (a first delivery waits
//! for the whole first claim: a small one returns sooner, and the next batch is claimed
//! while it runs). A claim starts at the type's batch size. When the handlers finish a prefetched batch
//! before the next claim returns (a slot waited on the database), and that claim came back
//! full, the next one asks for twice as many, up to the maximum: a fast backlog is then
//! claimed in fewer, larger transactions. A claim that comes back short (the backlog is
//! done) starts over at the batch size. Slow handlers never wait on a claim, so their
//! batches, and the messages held claimed before they start, stay small. Nor does a batch
//! grow past [`GROWTH_BYTES`] of payloads: large messages keep the batch they started with.

/// A batch doubles only while twice the payload bytes of the claim that came back stay
/// within this, so a grown batch holds about this much at most (and a worker's buffer a
/// batch and a half).
pub(crate) const GROWTH_BYTES: usize = 16 * 1024 * 1024;

/// The claim size of one worker and what moves it.
#[derive(Debug, Clone)]
pub(crate) struct ClaimSize {
    base: usize,
    max: usize,
    current: usize,
    /// The running claim is a prefetch (messages were buffered when it started).
    prefetch: bool,
    /// A slot waited for the running prefetch: the buffer ran dry.
    starved: bool,
    /// The most the first claim asks for, until it starts.
    first: Option<usize>,
}

impl ClaimSize {
    /// Starts at `base`, grows up to `max` (at least `base`).
    pub(crate) fn new(base: usize, max: usize) -> Self {
        let base = base.max(1);
        Self {
            base,
            max: max.max(base),
            current: base,
            prefetch: false,
            starved: false,
            first: None,
        }
    }

    /// The first claim asks for at most `n` (at least 1).
    pub(crate) fn first_at_most(mut self, n: usize) -> Self {
        self.first = Some(n.max(1));
        self
    }

    /// The current batch.
    pub(crate) fn batch(&self) -> usize {
        self.current
    }

    /// Below this many buffered messages the next batch is claimed while they run.
    pub(crate) fn refill_below(&self) -> usize {
        self.current / 2
    }

    /// How many to ask for with `buffered` messages waiting: the buffer holds a batch and a
    /// half, and a refill starts only once half a batch is left, so every claim but the
    /// last asks for at least a whole batch.
    pub(crate) fn room(&self, buffered: usize) -> usize {
        let room = (self.current + self.refill_below()).saturating_sub(buffered);
        self.first.map_or(room, |first| room.min(first))
    }

    /// A claim starts while `buffered` messages wait.
    pub(crate) fn claim_started(&mut self, buffered: usize) {
        self.first = None;
        self.prefetch = buffered > 0;
        self.starved = false;
    }

    /// A slot found the buffer empty while a claim runs.
    pub(crate) fn slot_waits(&mut self) {
        if self.prefetch {
            self.starved = true;
        }
    }

    /// The running claim returned `full` (as many as it asked for) or not, with `bytes`
    /// of payloads.
    pub(crate) fn claim_done(&mut self, full: bool, bytes: usize) {
        if !full {
            self.current = self.base;
        } else if self.starved && bytes.saturating_mul(2) <= GROWTH_BYTES {
            self.current = (self.current * 2).min(self.max);
        }
        self.prefetch = false;
        self.starved = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefetch that the handlers outran (a slot waited) and that came back full.
    fn outrun(size: &mut ClaimSize, bytes: usize) {
        size.claim_started(size.refill_below());
        size.slot_waits();
        size.claim_done(true, bytes);
    }

    #[test]
    fn grows_only_when_a_prefetch_left_a_slot_waiting() {
        let mut size = ClaimSize::new(100, 500);
        // The first claim of a run: nothing was buffered, so waiting for it says nothing.
        size.claim_started(0);
        size.slot_waits();
        size.claim_done(true, 10_000);
        assert_eq!(size.batch(), 100);
        // A prefetch that the handlers outran: double, up to the maximum.
        for expected in [200, 400, 500, 500] {
            outrun(&mut size, 10_000);
            assert_eq!(size.batch(), expected);
        }
        assert_eq!(size.room(0), 750);
        assert_eq!(size.room(250), 500);
    }

    #[test]
    fn the_first_claim_asks_for_the_concurrency_at_most() {
        let mut size = ClaimSize::new(100, 500).first_at_most(10);
        assert_eq!(size.room(0), 10);
        size.claim_started(0);
        size.claim_done(true, 1_000);
        // Then a batch and a half, as ever, and the batch did not move.
        assert_eq!(size.room(9), 141);
        assert_eq!(size.batch(), 100);
        // A concurrency above the batch changes nothing.
        assert_eq!(ClaimSize::new(100, 500).first_at_most(400).room(0), 150);
    }

    #[test]
    fn slow_handlers_keep_the_batch() {
        let mut size = ClaimSize::new(100, 500);
        for _ in 0..10 {
            size.claim_started(50);
            size.claim_done(true, 10_000);
        }
        assert_eq!(size.batch(), 100);
        assert_eq!(size.room(50), 100);
    }

    #[test]
    fn a_short_claim_starts_over() {
        let mut size = ClaimSize::new(100, 500);
        outrun(&mut size, 10_000);
        assert_eq!(size.batch(), 200);
        size.claim_started(100);
        size.claim_done(false, 10_000);
        assert_eq!(size.batch(), 100);
    }

    #[test]
    fn large_payloads_keep_the_batch() {
        let mut size = ClaimSize::new(100, 500);
        // 100 messages of 50 KiB: 5 MiB, doubling to 10 MiB is within the budget.
        outrun(&mut size, 100 * 50 * 1024);
        assert_eq!(size.batch(), 200);
        // 200 of 50 KiB: 10 MiB, doubling would hold 20 MiB.
        outrun(&mut size, 200 * 50 * 1024);
        assert_eq!(size.batch(), 200);
    }

    #[test]
    fn a_fixed_batch_never_moves() {
        let mut size = ClaimSize::new(6, 6);
        outrun(&mut size, 60);
        assert_eq!(size.batch(), 6);
        assert_eq!(ClaimSize::new(0, 0).batch(), 1);
    }
}
