use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(max_attempt = 3, colour = "red")]
struct UserMail {
    to: String,
}
fn main() {}
