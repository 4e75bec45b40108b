// The most likely slips with an sqlx pool: a pool is not a transaction.
use outbox::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, OutboxMessage)]
struct WelcomeMail {
    user_id: i64,
}

async fn shared_pool(pool: sqlx::SqlitePool) {
    let _ = WelcomeMail { user_id: 1 }.enqueue(&pool).await;
}

async fn mutable_pool(mut pool: sqlx::SqlitePool) {
    let _ = WelcomeMail { user_id: 1 }.enqueue(&mut pool).await;
}

fn main() {}
