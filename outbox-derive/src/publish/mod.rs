//! `#[derive(PublishEvent)]`, in the same phases as `OutboxMessage`'s, one module each:
//! `attr` parses the input and its `#[publish(...)]` attributes (patterns included) into
//! the model of `ast`, `valid` checks it and `expand` generates the `impl PublishEvent`.

mod ast;
mod attr;
mod expand;
mod valid;

pub use expand::derive;
