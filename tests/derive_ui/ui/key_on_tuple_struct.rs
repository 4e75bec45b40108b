use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(0))]
struct OrderId(u64);

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(id))]
struct OrderRef(String);
fn main() {}
