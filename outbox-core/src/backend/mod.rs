//! The engines per database: each implements the storage port ([`crate::store`]) and the
//! transactional enqueue for its connection type, with its SQL in `.sql` files. Nothing
//! here imports a layer, the worker or the admin API.

#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod enqueue_batch;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod sql_store;
#[cfg(feature = "sqlite")]
pub mod sqlite;

pub use crate::store::{
    Backend, DeadLetterStore, PauseStore, QueueStore, RateBucketStore, StatsStore, TokenGrant,
    UnregisteredType,
};

/// A claimed message from the integer columns a claim statement returns (attempt and
/// claim already counted), whatever integer width the database uses.
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) fn claimed_from_row(
    id: String,
    payload: Vec<u8>,
    attempt: i64,
    max_attempts: i64,
    priority: i64,
    due_ms: i64,
    claims: i64,
) -> crate::store::Claimed {
    let clamp_u32 = |v: i64| v.clamp(0, i64::from(u32::MAX)) as u32;
    crate::store::Claimed {
        id: crate::MessageId::from_string(id),
        payload,
        attempt: clamp_u32(attempt),
        max_attempts: clamp_u32(max_attempts),
        priority: priority.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
        due_at: crate::clock::from_unix_millis(due_ms),
        claim: clamp_u32(claims),
    }
}
