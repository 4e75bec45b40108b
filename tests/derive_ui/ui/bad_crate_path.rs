use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(crate = "not a path")]
struct UserMail {
    to: String,
}
fn main() {}
