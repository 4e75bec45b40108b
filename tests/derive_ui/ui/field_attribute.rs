use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct UserMail {
    #[outbox(key)]
    user_id: u64,
}
fn main() {}
