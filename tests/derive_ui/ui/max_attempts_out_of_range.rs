use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(max_attempts = 0)]
struct Never;

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(max_attempts = 1001)]
struct TooMany;
fn main() {}
