use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key())]
struct UserMail {
    user_id: u64,
}
fn main() {}
