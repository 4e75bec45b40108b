//! Whether this process reaches its database, said once: one WARN when the database stops
//! answering (calls fail at the connection, or none is answered for [`UNANSWERED`] while
//! some wait), a reminder at most once a [`REMIND_EVERY`] while it stays out of reach, and
//! one INFO when it answers again. The loops that call it (claims, settlements, heartbeat,
//! due probe, the readers of pauses and breakers, group hooks, history) report each call
//! here and log their own connection failures at DEBUG only, so an outage is a few lines,
//! not one per call. [`ReachState`] is a pure state machine with the time as an argument.

use std::{
    future::Future,
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::error::Error;

/// How long calls may wait (or keep failing) without any answer before the database is
/// reported out of reach.
pub(crate) const UNANSWERED: Duration = Duration::from_secs(3);
/// How often an outage that goes on is reported again.
pub(crate) const REMIND_EVERY: Duration = Duration::from_secs(60);
/// How often the process checks.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(500);

/// Whether `error` says the database could not be reached (the connection failed, broke or
/// could not be had), rather than that it answered with a refusal.
pub(crate) fn unreachable(error: &Error) -> bool {
    matches!(error, Error::Database(e) if crate::error::connection_failed(e))
}

/// What to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// The database stopped answering; the last error, if a call failed.
    Lost { error: Option<String> },
    /// It still does not answer, for this long.
    StillLost {
        for_: Duration,
        error: Option<String>,
    },
    /// It answers again, after this long out of reach.
    Back { after: Duration },
}

/// The calls of a process to its database, as answers and failures come in.
#[derive(Debug, Default)]
pub(crate) struct ReachState {
    /// Calls under way.
    in_flight: usize,
    /// Since when calls have waited or failed with no answer in between.
    unanswered_since: Option<Instant>,
    /// The last connection failure since the last answer.
    last_error: Option<String>,
    /// Since when the database was reported out of reach.
    lost_since: Option<Instant>,
    /// When that was last said.
    said: Option<Instant>,
}

impl ReachState {
    /// A call starts.
    pub(crate) fn begin(&mut self, now: Instant) {
        self.in_flight += 1;
        self.unanswered_since.get_or_insert(now);
    }

    /// A call got an answer (a result, or a refusal: the database is there).
    pub(crate) fn answered(&mut self, now: Instant) -> Option<Report> {
        self.in_flight = self.in_flight.saturating_sub(1);
        // The calls still under way wait from now on.
        self.unanswered_since = (self.in_flight > 0).then_some(now);
        self.last_error = None;
        let lost = self.lost_since.take()?;
        self.said = None;
        Some(Report::Back {
            after: now.saturating_duration_since(lost),
        })
    }

    /// A call failed at the connection.
    pub(crate) fn failed(&mut self, error: String, now: Instant) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.unanswered_since.get_or_insert(now);
        self.last_error = Some(error);
    }

    /// A call was given up before it ended (its caller stopped waiting).
    pub(crate) fn abandoned(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
        if self.in_flight == 0 && self.last_error.is_none() {
            self.unanswered_since = None;
        }
    }

    /// What to say at `now`, if anything.
    pub(crate) fn check(&mut self, now: Instant) -> Option<Report> {
        match self.lost_since {
            None => {
                let since = self.unanswered_since?;
                if now.saturating_duration_since(since) < UNANSWERED {
                    return None;
                }
                self.lost_since = Some(since);
                self.said = Some(now);
                Some(Report::Lost {
                    error: self.last_error.clone(),
                })
            }
            Some(lost) => {
                let said = self.said.unwrap_or(lost);
                if now.saturating_duration_since(said) < REMIND_EVERY {
                    return None;
                }
                self.said = Some(now);
                Some(Report::StillLost {
                    for_: now.saturating_duration_since(lost),
                    error: self.last_error.clone(),
                })
            }
        }
    }

    /// Whether the database was reported out of reach and has not answered since.
    #[cfg(test)]
    fn is_lost(&self) -> bool {
        self.lost_since.is_some()
    }
}

/// A process's [`ReachState`], and what it logs.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    state: Mutex<ReachState>,
}

/// Ends a call that was dropped before its result came.
struct Pending<'a> {
    reach: &'a Reach,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.reach.with(ReachState::abandoned);
        }
    }
}

impl Reach {
    fn with<R>(&self, f: impl FnOnce(&mut ReachState) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `call` (one call to the database), noting whether it was answered.
    pub(crate) async fn watch<T>(
        &self,
        call: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        self.with(|s| s.begin(Instant::now()));
        let mut pending = Pending {
            reach: self,
            done: false,
        };
        let result = call.await;
        pending.done = true;
        match &result {
            Err(e) if unreachable(e) => self.with(|s| s.failed(e.to_string(), Instant::now())),
            _ => {
                if let Some(Report::Back { after }) = self.with(|s| s.answered(Instant::now())) {
                    tracing::info!(
                        out_of_reach_for = ?after,
                        "the database answers again; the workers carry on"
                    );
                }
            }
        }
        result
    }

    /// Says whatever is due now (called every [`CHECK_EVERY`]).
    pub(crate) fn check(&self) {
        match self.with(|s| s.check(Instant::now())) {
            None | Some(Report::Back { .. }) => {}
            Some(Report::Lost { error }) => tracing::warn!(
                error = error.as_deref().unwrap_or("no answer"),
                "cannot reach the database; the workers keep trying (reminder once a minute) \
                 and start nothing whose lease may have run out"
            ),
            Some(Report::StillLost { for_, error }) => tracing::warn!(
                error = error.as_deref().unwrap_or("no answer"), out_of_reach_for = ?for_,
                "still cannot reach the database; the workers keep trying"
            ),
        }
    }
}

/// Starts the loop that says when the process's database goes out of reach and comes
/// back ([`Reach::check`] every [`CHECK_EVERY`]); it ends when `stopped` turns true.
pub(crate) fn watch_reach(
    reach: std::sync::Arc<Reach>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(CHECK_EVERY) => reach.check(),
                _ = stopped.wait_for(|s| *s) => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_call_that_hangs_is_reported_after_a_while_and_its_answer_once() {
        let t = Instant::now();
        let mut r = ReachState::default();
        r.begin(t);
        assert_eq!(r.check(t + ms(2999)), None);
        assert_eq!(r.check(t + UNANSWERED), Some(Report::Lost { error: None }));
        assert!(r.is_lost());
        // Said once; reminded once a minute.
        assert_eq!(r.check(t + UNANSWERED + ms(1)), None);
        assert_eq!(r.check(t + UNANSWERED + REMIND_EVERY - ms(1)), None);
        assert_eq!(
            r.check(t + UNANSWERED + REMIND_EVERY),
            Some(Report::StillLost {
                for_: REMIND_EVERY + UNANSWERED,
                error: None
            })
        );
        assert_eq!(r.check(t + UNANSWERED + REMIND_EVERY + ms(1)), None);
        r.begin(t + ms(70_000));
        assert_eq!(
            r.answered(t + ms(70_000)),
            Some(Report::Back { after: ms(70_000) })
        );
        assert!(!r.is_lost());
        assert_eq!(r.answered(t + ms(70_001)), None, "said once");
        assert_eq!(r.check(t + ms(100_000)), None);
    }

    #[test]
    fn failures_without_an_answer_are_reported_with_the_last_error() {
        let t = Instant::now();
        let mut r = ReachState::default();
        for i in 0..30 {
            r.begin(t + ms(100 * i));
            r.failed(format!("reset {i}"), t + ms(100 * i));
        }
        assert_eq!(
            r.check(t + ms(3000)),
            Some(Report::Lost {
                error: Some("reset 29".into())
            })
        );
    }

    #[test]
    fn a_failure_followed_by_an_answer_is_not_an_outage() {
        let t = Instant::now();
        let mut r = ReachState::default();
        r.begin(t);
        r.failed("reset".into(), t);
        r.begin(t + ms(50));
        assert_eq!(r.answered(t + ms(60)), None);
        assert_eq!(r.check(t + ms(10_000)), None);
        // Idle between calls: nothing waits, nothing to say.
        r.begin(t + ms(20_000));
        assert_eq!(r.answered(t + ms(20_001)), None);
        assert_eq!(r.check(t + ms(30_000)), None);
    }

    #[test]
    fn a_call_given_up_leaves_nothing_waiting() {
        let t = Instant::now();
        let mut r = ReachState::default();
        r.begin(t);
        r.abandoned();
        assert_eq!(r.check(t + ms(10_000)), None);
    }
}
