use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(id))]
enum Invoice {
    Issue { id: u32 },
    Cancel { id: u32 },
}
fn main() {}
