use outbox::publish::PublishEvent;
use serde::Serialize;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "orders.{0}.created")]
struct Tuple(u64);

#[derive(Serialize, PublishEvent)]
#[publish(subject = "pings.{id}")]
struct Unit;

#[derive(Serialize, PublishEvent)]
#[publish(subject = "billing.audit", key = "{id}")]
enum Audit {
    Started { id: u64 },
}

fn main() {}
