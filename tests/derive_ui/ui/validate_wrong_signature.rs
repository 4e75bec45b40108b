use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(validate = "rules::is_valid")]
struct UserMail {
    to: String,
}

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(validate = "rules::check_mail")]
struct Reminder {
    to: String,
}

mod rules {
    pub fn is_valid(mail: &super::UserMail) -> bool {
        mail.to.contains('@')
    }

    pub fn check_mail(_: &super::UserMail) -> Result<(), outbox::InvalidMessage> {
        Ok(())
    }
}
fn main() {}
