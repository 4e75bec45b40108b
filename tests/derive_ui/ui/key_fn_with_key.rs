use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key(to), key_fn = "mail_key")]
struct UserMail {
    to: String,
}

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key_fn = "reminder_key")]
#[outbox(key(to))]
struct Reminder {
    to: String,
}

fn mail_key(mail: &UserMail) -> Option<String> {
    Some(mail.to.clone())
}

fn reminder_key(reminder: &Reminder) -> Option<String> {
    Some(reminder.to.clone())
}
fn main() {}
