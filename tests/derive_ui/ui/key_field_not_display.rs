use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Address {
    line: String,
}

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(user_id, address))]
struct UserMail {
    user_id: u64,
    address: Address,
}
fn main() {}
