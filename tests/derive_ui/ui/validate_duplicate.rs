use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(validate = "check_mail")]
#[outbox(priority = 1, validate = "check_mail")]
struct UserMail {
    to: String,
}

fn check_mail(_: &UserMail) -> Result<(), outbox::InvalidMessage> {
    Ok(())
}
fn main() {}
