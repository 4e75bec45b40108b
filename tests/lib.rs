//! The outbox test suite. Each test is its own target in this package (see `Cargo.toml`);
//! what they share lives in `common/` and is included by path. This library is empty.
