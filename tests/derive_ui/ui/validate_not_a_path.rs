use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(validate = "not a path!")]
struct UserMail {
    to: String,
}

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key_fn = "keys::mail_key()")]
struct Reminder {
    to: String,
}
fn main() {}
