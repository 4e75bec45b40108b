use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key_fn = mail_key, valdiate = "check")]
struct UserMail {
    to: String,
}

fn mail_key(mail: &UserMail) -> Option<String> {
    Some(mail.to.clone())
}
fn main() {}
