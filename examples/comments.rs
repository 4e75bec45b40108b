//! The transactional outbox on MariaDB: a blog comment, and one notification to each of
//! the post's subscribers, written in the same transaction — both or neither. A comment
//! on a post that does not exist fails, and then no notification exists either.
//!
//! ```sh
//! cargo run -p outbox-examples --example comments                       # the local default
//! DATABASE_URL=mysql://app@db/app cargo run -p outbox-examples --example comments
//! ```
//!
//! Without `DATABASE_URL` it connects to `outbox::mysql::DEFAULT_URL`
//! (`mysql://root@127.0.0.1:3306/test`). It creates the outbox's tables if missing, and
//! tables `outbox_example_posts`, `…_subscribers` and `…_comments`, and removes them and
//! its messages (type `example.comment_notification`) at the end.

use outbox::{enqueue_many, prelude::*};
use serde::{Deserialize, Serialize};
use sqlx::{MySqlConnection, MySqlPool};

const TYPE: &str = "example.comment_notification";

/// "Someone commented on a post you follow", to one subscriber; one per comment and
/// subscriber.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "example.comment_notification", key(comment_id, to))]
struct CommentNotification {
    comment_id: i64,
    to: String,
    excerpt: String,
}

/// The handler: prints instead of mailing.
async fn notify(n: CommentNotification, _ctx: MessageContext) -> Result<(), HandlerError> {
    println!(
        "   {} hears of comment {}: {:?}",
        n.to, n.comment_id, n.excerpt
    );
    Ok(())
}

/// The application's "post a comment": the comment row, then a notification for each
/// subscriber of the post but the author, all through the caller's transaction.
async fn post_comment(
    tx: &mut MySqlConnection,
    post: i64,
    author: &str,
    text: &str,
) -> Result<usize, Box<dyn std::error::Error>> {
    let comment =
        sqlx::query("INSERT INTO outbox_example_comments (post_id, author, body) VALUES (?, ?, ?)")
            .bind(post)
            .bind(author)
            .bind(text)
            .execute(&mut *tx)
            .await?
            .last_insert_id() as i64;
    let subscribers: Vec<String> = sqlx::query_scalar(
        "SELECT email FROM outbox_example_subscribers WHERE post_id = ? AND email <> ? ORDER BY email",
    )
    .bind(post)
    .bind(author)
    .fetch_all(&mut *tx)
    .await?;
    let excerpt: String = text.chars().take(40).collect();
    let notes: Vec<CommentNotification> = subscribers
        .into_iter()
        .map(|to| CommentNotification {
            comment_id: comment,
            to,
            excerpt: excerpt.clone(),
        })
        .collect();
    let written = enqueue_many(&mut *tx, &notes).await?;
    Ok(written.iter().filter(|e| !e.is_duplicate()).count())
}

/// Removes what this example wrote.
async fn clean_up(pool: &MySqlPool) -> Result<(), sqlx::Error> {
    for table in ["comments", "subscribers", "posts"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS outbox_example_{table}"
        )))
        .execute(pool)
        .await?;
    }
    for table in ["outbox_messages", "outbox_dead_letters"] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM {table} WHERE type_tag = ?"
        )))
        .bind(TYPE)
        .execute(pool)
        .await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url =
        std::env::var("DATABASE_URL").unwrap_or_else(|_| outbox::mysql::DEFAULT_URL.to_owned());
    let pool = outbox::mysql::connect(&url).await?;
    let outbox =
        Outbox::new(MySqlBackend::new(pool.clone())).register::<CommentNotification, _>(notify);
    outbox.migrate().await?;
    clean_up(&pool).await?;
    for ddl in [
        "CREATE TABLE outbox_example_posts (id BIGINT PRIMARY KEY, title VARCHAR(200) NOT NULL) ENGINE=InnoDB",
        "CREATE TABLE outbox_example_subscribers (post_id BIGINT NOT NULL, email VARCHAR(255) NOT NULL, \
         PRIMARY KEY (post_id, email), FOREIGN KEY (post_id) REFERENCES outbox_example_posts (id)) ENGINE=InnoDB",
        "CREATE TABLE outbox_example_comments (id BIGINT AUTO_INCREMENT PRIMARY KEY, post_id BIGINT NOT NULL, \
         author VARCHAR(255) NOT NULL, body TEXT NOT NULL, \
         FOREIGN KEY (post_id) REFERENCES outbox_example_posts (id)) ENGINE=InnoDB",
        "INSERT INTO outbox_example_posts (id, title) VALUES (1, 'Release notes')",
        "INSERT INTO outbox_example_subscribers (post_id, email) VALUES \
         (1, 'ada@example.com'), (1, 'bob@example.com'), (1, 'eve@example.com')",
    ] {
        sqlx::query(ddl).execute(&pool).await?;
    }

    println!(
        "1. Bob comments on post 1: his comment and a notification for each other subscriber."
    );
    let mut tx = pool.begin().await?;
    let queued = post_comment(&mut tx, 1, "bob@example.com", "Great release, thanks!").await?;
    tx.commit().await?;
    println!("   {queued} notifications committed with the comment");

    println!("2. A comment on post 99 (it does not exist): the insert fails, the transaction rolls back.");
    let mut tx = pool.begin().await?;
    match post_comment(&mut tx, 99, "eve@example.com", "Hello?").await {
        Ok(_) => return Err("a comment on a missing post was accepted".into()),
        Err(e) => println!("   refused ({e}); nothing of it, and no notification, remains"),
    }
    tx.rollback().await?;

    println!("3. A drain delivers the notifications:");
    let report = outbox.drain().await?;
    clean_up(&pool).await?;
    pool.close().await;
    if report.counts.delivered != 2 {
        return Err(format!(
            "expected 2 notifications, delivered {}",
            report.counts.delivered
        )
        .into());
    }
    Ok(())
}
