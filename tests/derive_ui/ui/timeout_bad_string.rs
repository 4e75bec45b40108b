use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(timeout = "30 seconds")]
struct Slow;

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(timeout = "1d")]
struct Daily;
fn main() {}
