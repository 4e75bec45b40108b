//! The throughput history: a task reads the persisted delivery history (what every
//! process's workers reported per minute and type, see `Admin::history`) every few
//! seconds, so the chart shows the last hour across restarts of the admin and of the
//! workers.

use std::{
    sync::{Arc, Mutex, Weak},
    time::{Duration, SystemTime},
};

use crate::{backend::Backend, Admin, MinuteOutcomes};

/// How far back the chart looks.
pub(crate) const WINDOW: Duration = Duration::from_secs(3600);

#[derive(Default)]
struct History {
    /// The last hour's minutes, as last read.
    minutes: Vec<MinuteOutcomes>,
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
    /// How far back the figures go (the whole window: the history is persisted).
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

    /// Starts the reading task on the current runtime, once; it ends when the sampler is
    /// dropped (with its router).
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
        Series {
            per_minute: per_minute(&history.minutes, type_tag, SystemTime::now()),
            covered: WINDOW,
        }
    }
}

/// The deliveries of `type_tag` (or all) in each of the 60 minutes up to `now`'s.
fn per_minute(minutes: &[MinuteOutcomes], type_tag: Option<&str>, now: SystemTime) -> Vec<u64> {
    let mut per_minute = vec![0u64; 60];
    for m in minutes {
        if type_tag.is_some_and(|t| t != m.outcomes.type_tag) {
            continue;
        }
        // A minute stamped ahead of this host's clock counts as the current one.
        let ago = now.duration_since(m.minute).unwrap_or_default().as_secs() / 60;
        if ago < 60 {
            per_minute[59 - ago as usize] += m.outcomes.delivered;
        }
    }
    per_minute
}

/// The reading loop: one history query per interval; a failed query keeps the last one.
async fn run<B: Backend>(admin: Admin<B>, history: Weak<Mutex<History>>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let minutes = admin.history(WINDOW).await;
        let Some(history) = history.upgrade() else {
            return;
        };
        if let Ok(minutes) = minutes {
            history.lock().unwrap_or_else(|p| p.into_inner()).minutes = minutes;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::TypeOutcomes;

    fn minute(at_min: u64, type_tag: &str, delivered: u64) -> MinuteOutcomes {
        MinuteOutcomes {
            minute: UNIX_EPOCH + Duration::from_secs(at_min * 60),
            outcomes: TypeOutcomes {
                type_tag: type_tag.into(),
                delivered,
                ..TypeOutcomes::default()
            },
        }
    }

    #[test]
    fn minutes_land_in_their_slot_of_the_last_hour() {
        let now = UNIX_EPOCH + Duration::from_secs(100 * 60 + 30);
        let rows = [
            minute(100, "a", 5),
            minute(100, "b", 2),
            minute(99, "a", 3),
            minute(41, "a", 1),
            minute(40, "a", 100),
        ];
        let all = per_minute(&rows, None, now);
        assert_eq!(
            (all[59], all[58], all[0]),
            (7, 3, 1),
            "minute 40 is an hour ago"
        );
        assert_eq!(all.iter().sum::<u64>(), 11);
        let a = per_minute(&rows, Some("a"), now);
        assert_eq!(a[59], 5);
    }
}
