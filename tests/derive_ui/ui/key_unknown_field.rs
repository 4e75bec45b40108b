use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(user_idd, template))]
struct UserMail {
    user_id: u64,
    template: String,
}
#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(0))]
struct ByIndex {
    id: u64,
}

fn main() {}
