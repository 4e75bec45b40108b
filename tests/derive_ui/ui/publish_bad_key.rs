use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.created", key = "")]
struct EmptyKey {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.created", key = "order\n{id}")]
struct ControlInKey {
    id: u64,
}

fn main() {}
