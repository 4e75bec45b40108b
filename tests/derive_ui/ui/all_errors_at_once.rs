use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "user mail", max_attempts = 0, key(missing))]
#[outbox(timeout = "soon", priority = 1, priority = 2)]
struct UserMail {
    to: String,
}
fn main() {}
