use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{idd}.created", key = "{tenant}:{order}")]
struct OrderCreated {
    id: u64,
    tenant: String,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{0}")]
struct ByIndex {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subject = "ping.{id}")]
struct Empty {}

fn main() {}
