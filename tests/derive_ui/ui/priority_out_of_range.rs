use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(priority = 65536)]
struct TooHigh;

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(priority = -1)]
struct Negative;
fn main() {}
