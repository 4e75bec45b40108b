use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "registration.user_mail.welcome_sequence.first_reminder.second_reminder.final_reminder.unsubscribed_notice")]
struct UserMail {
    to: String,
}
fn main() {}
