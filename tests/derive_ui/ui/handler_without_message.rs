// A handler must take the message first; the error says what a handler takes.
use outbox::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct WelcomeMail {
    user_id: i64,
}

async fn deliver(_ctx: MessageContext) -> Result<(), HandlerError> {
    Ok(())
}

fn register(outbox: Outbox<SqliteBackend>) -> Outbox<SqliteBackend> {
    outbox.register::<WelcomeMail, _>(deliver)
}

fn main() {}
