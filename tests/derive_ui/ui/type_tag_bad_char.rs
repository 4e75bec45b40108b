use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "registration/user mail")]
struct UserMail {
    to: String,
}
fn main() {}
