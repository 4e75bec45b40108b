use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "envelopes.{id}")]
struct Envelope<T> {
    id: u64,
    body: T,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "borrowed.{id}")]
struct Borrowed<'a> {
    id: &'a str,
}

fn main() {}
