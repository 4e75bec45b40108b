//! The records of [`ShapingStore`](super::ShapingStore) that carry the time the database
//! answered at, so the worker's own decisions (which sites are in force, when a deferred
//! message comes back) run on the same clock as the rows they read.

use std::time::SystemTime;

use crate::shaping::{SiteDecision, SiteState};

/// The sites the workers must ask, and when they were read.
#[derive(Debug, Clone, PartialEq)]
pub struct SitesInForce {
    /// The time of the read: the database's clock for [`Now::Database`](super::Now), else
    /// the time given. The sites are in force at this time.
    pub read_at: SystemTime,
    /// The sites with configured limits or a rule's action in force, by name, without
    /// their slots.
    pub sites: Vec<SiteState>,
}

/// What a site's row said about one more message, and when.
#[derive(Debug, Clone, PartialEq)]
pub struct SiteAnswer {
    /// The grant, or how long to wait (from `at`).
    pub decision: SiteDecision,
    /// The time the row was asked at: the database's clock for
    /// [`Now::Database`](super::Now), else the time given.
    pub at: SystemTime,
}
