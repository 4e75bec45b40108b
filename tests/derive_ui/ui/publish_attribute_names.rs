use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{id}.created", kye = "{id}")]
#[publish(subject = "orders.{id}.placed", colour = "red")]
struct OrderCreated {
    id: u64,
}

#[derive(Serialize, PublishEvent)]
#[publish(subjet = "orders.created")]
struct Misspelt;

fn main() {}
