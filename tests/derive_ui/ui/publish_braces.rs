use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{id.created")]
struct Unclosed {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.id}.created")]
struct Unmatched {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{}.created")]
struct EmptyPlaceholder {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{id:>8}", key = "{self.id}")]
struct Expressions {
    id: u64,
}

fn main() {}
