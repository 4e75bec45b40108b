// An application on a sqlx version the outbox does not take (0.7 here): its transaction is
// another type than the ones the outbox enqueues through, and the note names those.
use outbox::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct WelcomeMail {
    user_id: i64,
}

async fn older_sqlx(pool: sqlx07::PgPool) {
    let mut tx = pool.begin().await.unwrap();
    let _ = WelcomeMail { user_id: 1 }.enqueue(&mut *tx).await;
}

fn main() {}
