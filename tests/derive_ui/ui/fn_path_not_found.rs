use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(validate = "rules::chek_mail", key_fn = "rules::mail_kye")]
struct UserMail {
    to: String,
}

mod rules {
    pub fn check_mail(_: &super::UserMail) -> Result<(), outbox::InvalidMessage> {
        Ok(())
    }
    pub fn mail_key(m: &super::UserMail) -> Option<String> {
        Some(m.to.clone())
    }
}
fn main() {}
