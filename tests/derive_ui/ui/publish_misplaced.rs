use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{id}.created")]
struct OrderCreated {
    #[publish(key)]
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "billing.audit")]
enum Audit {
    #[publish(subject = "billing.started")]
    Started,
}

fn main() {}
