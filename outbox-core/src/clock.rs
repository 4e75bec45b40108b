//! Where the layers read the time (so tests can control it), and the one place times are
//! converted to the units the database stores.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that only moves when told to (for tests).
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Mutex<SystemTime>>);

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: SystemTime) -> Self {
        Self(Arc::new(Mutex::new(start)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Unix milliseconds of `t`: the unit every backend stores times in (0 before 1970).
pub fn unix_millis(t: SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

/// Unix milliseconds of `t`, rounded up to the next whole millisecond: for due times,
/// which must never be early.
pub fn unix_millis_ceil(t: SystemTime) -> i64 {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    ms.saturating_add(i64::from(d.subsec_nanos() % 1_000_000 > 0))
}

/// The time `ms` unix milliseconds stand for (negative values read as 1970).
pub fn from_unix_millis(ms: i64) -> SystemTime {
    std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)
}

/// Unix seconds of `t` with sub-second precision (the unit of rate buckets).
pub fn unix_secs_f64(t: SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_round_trip_and_ceil() {
        let t = std::time::UNIX_EPOCH + Duration::from_micros(1_500_250);
        assert_eq!(unix_millis(t), 1_500);
        assert_eq!(unix_millis_ceil(t), 1_501);
        assert_eq!(unix_millis_ceil(from_unix_millis(1_500)), 1_500);
        assert_eq!(from_unix_millis(-5), std::time::UNIX_EPOCH);
    }
}
