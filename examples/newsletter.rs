//! A newsletter as a campaign: 200,000 subscribers' mails enqueued into one group straight
//! from the `subscribers` table (`enqueue_select`, one `INSERT … SELECT`), delivered by a
//! running outbox while the campaign's progress is printed; the campaign is paused, resumed,
//! and its rest cancelled, and its completion message reports the final figures.
//!
//! Run it with `cargo run --release -p outbox-examples --example newsletter` (`NEWSLETTER_SUBSCRIBERS=5000`
//! for a short run). It needs no server: a SQLite file in the system's temp directory.

use std::{sync::Arc, time::Duration};

use outbox::{prelude::*, GroupProgress, Groups, Select, SqliteBackend};
use serde::{Deserialize, Serialize};

/// The campaign every mail belongs to.
const CAMPAIGN: &str = "newsletter-2026-11";

/// One subscriber's copy of the newsletter (a real handler would send an email).
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "newsletter_demo.issue")]
struct Issue {
    email: String,
    issue: i64,
}

/// Enqueued by the campaign's completion hook once nothing of it is left.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "newsletter_demo.finished")]
struct CampaignFinished {
    campaign: String,
}

/// What the handlers share: the campaign's admin handle, to report its final figures.
struct State {
    groups: Groups<SqliteBackend>,
}

async fn send(_: Issue, _: MessageContext<Arc<State>>) -> Result<(), HandlerError> {
    // Stands in for the SMTP round trip.
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(())
}

async fn finished(
    m: CampaignFinished,
    ctx: MessageContext<Arc<State>>,
) -> Result<(), HandlerError> {
    let p = ctx
        .state()
        .groups
        .show(&m.campaign)
        .await
        .map_err(HandlerError::retry)?
        .ok_or_else(|| HandlerError::permanent("the campaign is unknown"))?;
    println!(
        "campaign {} finished: {} sent, {} dead, {} cancelled",
        m.campaign, p.delivered, p.dead, p.cancelled
    );
    Ok(())
}

/// Prints the campaign's progress every 0.5 s until `until` says stop.
async fn watch(groups: &Groups<SqliteBackend>, what: &str, until: impl Fn(&GroupProgress) -> bool) {
    loop {
        let p = groups
            .show(CAMPAIGN)
            .await
            .expect("read progress")
            .expect("known");
        let eta = p
            .eta()
            .map_or("-".to_owned(), |d| format!("{:.0} s", d.as_secs_f64()));
        println!(
            "{what:>9}: {:>7} of {} sent, {:>6} queued, {:>6} paused, {:>3} running, {:>6} cancelled, {:>6.0}/s, ETA {eta}",
            p.delivered,
            p.total(),
            p.pending + p.scheduled + p.retrying,
            p.paused,
            p.running,
            p.cancelled,
            p.rate,
        );
        if until(&p) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let subscribers: i64 = std::env::var("NEWSLETTER_SUBSCRIBERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    let path = std::env::temp_dir().join(format!("outbox-newsletter-{}.db", std::process::id()));
    let pool = outbox::sqlite::connect(&format!("sqlite://{}", path.display())).await?;
    let backend = SqliteBackend::new(pool.clone());
    let groups = Outbox::new(backend.clone()).admin().groups();
    let state = Arc::new(State {
        groups: groups.clone(),
    });
    let outbox = Outbox::with_state(backend, state)
        .register::<Issue, _>(send)
        .register::<CampaignFinished, _>(finished);
    outbox.migrate().await?;

    // The application's own table.
    sqlx::query("CREATE TABLE subscribers (id INTEGER PRIMARY KEY, email TEXT NOT NULL)")
        .execute(&pool)
        .await?;
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) \
         INSERT INTO subscribers (id, email) SELECT i, 'reader' || i || '@example.com' FROM n",
    )
    .bind(subscribers)
    .execute(&pool)
    .await?;

    // The fan-out: one statement, in the transaction that records the campaign.
    let started = std::time::Instant::now();
    let mut tx = pool.begin().await?;
    let query = Select::new(
        "SELECT json_object('email', email, 'issue', ?) AS payload, \
                'issue-7:' || id AS idempotency_key \
         FROM subscribers ORDER BY id",
    )
    .bind(7);
    let enqueued =
        outbox::enqueue_select::<Issue, _>(&mut *tx, &query, EnqueueOptions::new().group(CAMPAIGN))
            .await?;
    tx.commit().await?;
    println!(
        "enqueued {enqueued} mails into {CAMPAIGN} in {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    groups
        .on_complete(
            CAMPAIGN,
            &CampaignFinished {
                campaign: CAMPAIGN.into(),
            },
        )
        .await?;

    let total = enqueued;
    outbox
        .run_until(async {
            watch(&groups, "sending", |p| p.delivered >= total / 4).await;
            groups
                .pause(CAMPAIGN, "a typo in the subject")
                .await
                .expect("pause");
            tokio::time::sleep(Duration::from_millis(300)).await;
            watch(&groups, "paused", |p| p.running == 0).await;
            let held = groups.show(CAMPAIGN).await.unwrap().unwrap().delivered;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let still = groups.show(CAMPAIGN).await.unwrap().unwrap().delivered;
            println!("   paused: {} sent during the last second", still - held);
            groups.resume(CAMPAIGN).await.expect("resume");
            watch(&groups, "resumed", |p| p.delivered >= total / 2).await;
            let cancelled = groups.cancel(CAMPAIGN).await.expect("cancel");
            println!("cancelled the {cancelled} mails not started yet");
            watch(&groups, "finishing", |p| {
                p.remaining() == 0 && p.completed_at.is_some()
            })
            .await;
            // Time for the completion message's handler.
            tokio::time::sleep(Duration::from_millis(1_500)).await;
        })
        .await?;

    let p = groups.show(CAMPAIGN).await?.expect("known");
    pool.close().await;
    let _ = std::fs::remove_file(&path);
    if p.delivered + p.cancelled != total || p.remaining() != 0 {
        return Err(format!("the campaign's figures do not add up: {p:?}").into());
    }
    Ok(())
}
