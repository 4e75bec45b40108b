//! The engines per database: each implements the storage port ([`crate::store`]) and the
//! transactional enqueue for its connection type, with its SQL in `.sql` files. The port
//! itself is written once, over a small dialect each database implements (`sql`). Nothing
//! here imports a layer, the worker or the admin API.

#[cfg(any(
    feature = "sqlx08",
    feature = "sea-orm",
    feature = "diesel-async",
    feature = "diesel-postgres",
    feature = "diesel-mysql",
    feature = "diesel-sqlite"
))]
pub(crate) mod bridge;
// Without a database feature only the URL redaction is used.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(dead_code)
)]
mod connect;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod migrations;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod nodelay;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
mod sql;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod tls_files;

#[cfg(any(feature = "postgres", feature = "mysql"))]
pub use tls_files::check_tls_files;

pub use crate::store::{
    Backend, DeadLetterStore, PauseStore, QueueStore, RateBucketStore, StatsStore, TokenGrant,
    UnregisteredType,
};
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) use connect::probe;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "mysql"))]
pub(crate) use connect::{check_scheme, connect_error, Engine};
pub use connect::{redact_password, redact_url};
