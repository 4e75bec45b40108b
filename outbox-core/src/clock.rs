//! Where the outbox reads the time (so tests can control it), which clock the database
//! work runs on, and the one place times are converted to the units the database stores.
//!
//! # One time authority
//!
//! Due times, leases, the rescue of expired leases, rate-bucket refills and the shaping of
//! sites (their tokens, slots and rule windows) are computed by the database from its own
//! clock on PostgreSQL and MariaDB (`now()`, `@@timestamp`), so processes on hosts whose
//! clocks disagree still agree on when a message is due and when a lease has run out.
//! SQLite lives on one host and uses the process clock. A test that injects a
//! [`ManualClock`] pins that time instead ([`Clock::database_now`]), on every database, so
//! it can expire a lease or make a retry due without sleeping.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, SystemTime},
};

/// The time a database operation runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Now {
    /// The database's own clock (PostgreSQL, MariaDB); on SQLite, the process clock.
    Database,
    /// This time, whatever the database's clock says (a test's [`ManualClock`]).
    At(SystemTime),
}

impl Now {
    /// The time this stands for, reading the process clock for [`Now::Database`] (the
    /// database's own clock is only read by the database).
    pub fn or_system(self) -> SystemTime {
        match self {
            Now::Database => system_now(),
            Now::At(t) => t,
        }
    }
}

/// When a message is due: a delay after the database's `now`, or a chosen time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// This long after `now` (by the clock the database work runs on).
    After(Duration),
    /// At this time; a time already past means due at once.
    At(SystemTime),
}

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current time, as this process sees it (for logs, metrics and displays).
    fn now(&self) -> SystemTime;

    /// The time database work runs at: the database's own clock unless this clock pins
    /// the time. The default pins [`Clock::now`]; [`SystemClock`] leaves the time to the
    /// database.
    fn database_now(&self) -> Now {
        Now::At(self.now())
    }
}

/// The system's clock; database work runs on the database's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        system_now()
    }

    fn database_now(&self) -> Now {
        Now::Database
    }
}

/// The process's wall clock: the one place the library reads it.
pub fn system_now() -> SystemTime {
    SystemTime::now()
}

/// A clock that only moves when told to (for tests). Database work runs at its time too —
/// or at the system's time while that is later, so messages enqueued after the clock was
/// made are due at once — so advancing it past a lease expires the lease, and past a due
/// time makes it due, without sleeping. Started in the future, it stands still for the
/// database too (exact rate-bucket arithmetic).
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

    /// The later of this clock and the system's: time moves forward, never back.
    fn database_now(&self) -> Now {
        Now::At(self.now().max(system_now()))
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
