//! The outbox's examples: each is an example target of this package (see `Cargo.toml`),
//! run with `cargo run -p outbox-examples --example NAME`. This library is empty.
