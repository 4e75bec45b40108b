use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(max_attempts = "5", priority = 1.5, type = registration, timeout = 30)]
struct UserMail {
    to: String,
}
fn main() {}
