//! Holds one compile-fail test (`ui.rs`); this library is empty.
