use outbox::OutboxMessage;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
#[outbox(key_fn = "reminder_key")]
enum Reminder {
    Once { to: String },
    Daily(String),
}

fn reminder_key(reminder: &Reminder) -> String {
    match reminder {
        Reminder::Once { to } | Reminder::Daily(to) => to.clone(),
    }
}
fn main() {}
