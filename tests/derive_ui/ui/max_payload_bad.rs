use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(max_payload = "4MB")]
struct Big;

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(max_payload = "2048MiB")]
struct Huge;

fn main() {}
