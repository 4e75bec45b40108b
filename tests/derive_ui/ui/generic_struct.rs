use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct Envelope<T> {
    payload: T,
}

#[derive(Serialize, Deserialize, OutboxMessage)]
struct Borrowed<'a> {
    text: &'a str,
}
fn main() {}
