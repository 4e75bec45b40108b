use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "")]
struct UserMail {
    to: String,
}
fn main() {}
