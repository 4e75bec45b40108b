use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "user.mail", priority = 1)]
#[outbox(type = "user.mail.v2")]
struct UserMail {
    to: String,
}
fn main() {}
