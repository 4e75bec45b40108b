//! Holds the derive's compile-fail cases (`main.rs`, `ui/`); this library is empty.
