//! The throughput history: a task samples the status counts every few seconds and keeps
//! an hour of per-type delivery estimates in memory (the database keeps no history).

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{Arc, Mutex, Weak},
    time::{Duration, SystemTime},
};

use crate::{backend::Backend, Admin, TypeCounts};

/// How far back the chart looks.
pub(crate) const WINDOW: Duration = Duration::from_secs(3600);

/// One sample: the deliveries per type estimated for the interval that ended at `at`.
struct Sample {
    at: SystemTime,
    delivered: BTreeMap<String, u64>,
}

/// What a type's counts were at the previous sample.
#[derive(Clone, Copy)]
struct Level {
    queued: u64,
    done: u64,
    dead: u64,
}

impl Level {
    fn of(c: &TypeCounts) -> Self {
        Self {
            queued: c.pending + c.scheduled + c.running + c.retrying + c.paused,
            done: c.done,
            dead: c.dead,
        }
    }

    /// Deliveries between `self` and `now`: the growth of the done rows when the outbox
    /// keeps them, else what left the queue without becoming a dead letter (a lower
    /// bound: enqueues in the interval hide as many deliveries).
    fn delivered_until(self, now: Level) -> u64 {
        if self.done > 0 || now.done > 0 {
            now.done.saturating_sub(self.done)
        } else {
            let left = self.queued as i128 - now.queued as i128;
            let died = now.dead as i128 - self.dead as i128;
            (left - died).max(0) as u64
        }
    }
}

#[derive(Default)]
struct History {
    started: Option<SystemTime>,
    last: Option<BTreeMap<String, Level>>,
    samples: VecDeque<Sample>,
}

/// The sampler of one router: its interval, history and whether its task runs.
pub(crate) struct Sampler {
    every: Duration,
    history: Arc<Mutex<History>>,
    started: std::sync::Once,
}

/// Deliveries per minute over the last hour, oldest first, for one type or all.
pub(crate) struct Series {
    /// 60 one-minute totals, the last one the current minute.
    pub(crate) per_minute: Vec<u64>,
    /// How long the sampler has been running (capped at the window).
    pub(crate) covered: Duration,
}

impl Sampler {
    pub(crate) fn new(every: Duration) -> Self {
        Self {
            every,
            history: Arc::default(),
            started: std::sync::Once::new(),
        }
    }

    /// Starts the sampling task on the current runtime, once; it ends when the sampler
    /// is dropped (with its router).
    pub(crate) fn start<B: Backend>(&self, admin: &Admin<B>) {
        self.started.call_once(|| {
            let history = Arc::downgrade(&self.history);
            let admin = admin.clone();
            let every = self.every;
            tokio::spawn(run(admin, history, every));
        });
    }

    /// The per-minute deliveries of `type_tag` (or of every type) over the last hour.
    pub(crate) fn series(&self, type_tag: Option<&str>) -> Series {
        let history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        let now = SystemTime::now();
        let mut per_minute = vec![0u64; 60];
        for s in &history.samples {
            let Ok(ago) = now.duration_since(s.at) else {
                per_minute[59] += total(&s.delivered, type_tag);
                continue;
            };
            let minute = (ago.as_secs() / 60) as usize;
            if minute < 60 {
                per_minute[59 - minute] += total(&s.delivered, type_tag);
            }
        }
        let covered = history
            .started
            .and_then(|t| now.duration_since(t).ok())
            .unwrap_or_default()
            .min(WINDOW);
        Series {
            per_minute,
            covered,
        }
    }
}

fn total(delivered: &BTreeMap<String, u64>, type_tag: Option<&str>) -> u64 {
    match type_tag {
        Some(t) => delivered.get(t).copied().unwrap_or(0),
        None => delivered.values().sum(),
    }
}

/// The sampling loop: one status query per interval; a failed query skips the sample
/// (the next one spans the gap).
async fn run<B: Backend>(admin: Admin<B>, history: Weak<Mutex<History>>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let counts = admin.status_counts().await;
        let Some(history) = history.upgrade() else {
            return;
        };
        let Ok(counts) = counts else {
            continue;
        };
        let now = SystemTime::now();
        let levels: BTreeMap<String, Level> = counts
            .iter()
            .map(|c| (c.type_tag.clone(), Level::of(c)))
            .collect();
        let mut h = history.lock().unwrap_or_else(|p| p.into_inner());
        h.started.get_or_insert(now);
        if let Some(last) = &h.last {
            let empty = Level {
                queued: 0,
                done: 0,
                dead: 0,
            };
            let delivered: BTreeMap<String, u64> = levels
                .iter()
                .map(|(t, l)| {
                    let before = last.get(t).copied().unwrap_or(empty);
                    (t.clone(), before.delivered_until(*l))
                })
                .chain(
                    // A type gone from the counts: its queue emptied.
                    last.iter()
                        .filter(|(t, _)| !levels.contains_key(*t))
                        .map(|(t, l)| (t.clone(), l.delivered_until(empty))),
                )
                .filter(|(_, n)| *n > 0)
                .collect();
            h.samples.push_back(Sample { at: now, delivered });
        }
        h.last = Some(levels);
        while h
            .samples
            .front()
            .is_some_and(|s| now.duration_since(s.at).unwrap_or_default() > WINDOW)
        {
            h.samples.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(queued: u64, done: u64, dead: u64) -> Level {
        Level { queued, done, dead }
    }

    #[test]
    fn deliveries_are_estimated_from_the_counts() {
        // Kept done rows: their growth, whatever was enqueued meanwhile.
        assert_eq!(level(10, 5, 0).delivered_until(level(30, 9, 0)), 4);
        // Deleted on success: the queue's shrinking, less what died.
        assert_eq!(level(10, 0, 0).delivered_until(level(4, 0, 2)), 4);
        // A requeue (dead back to the queue) is no delivery.
        assert_eq!(level(0, 0, 3).delivered_until(level(3, 0, 0)), 0);
        // Growth hides deliveries: never negative.
        assert_eq!(level(1, 0, 0).delivered_until(level(5, 0, 0)), 0);
    }
}
