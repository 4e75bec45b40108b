//! A receiving server's permanent "user unknown" reply (`550 5.1.1`) to a list email puts
//! the address on the suppression list (a hard bounce, with the reply as its source), on
//! every database; the message itself is a dead letter as before, a transactional email to
//! an unknown address suppresses nothing by default, and other refusals (`5.7.1` policy)
//! never suppress.

use std::{collections::HashMap, time::Duration};

use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SmtpConfig, Unsubscribe, UnsubscribeKeys},
    Admin, DeadLetterFilter, SuppressionFilter, SuppressionReason, SuppressionScope,
};

use super::{harness::Harness, smtp_sink::SinkOptions, smtp_sink::SmtpSink};

fn email(to: &str, list: bool) -> Email {
    let b = Email::builder()
        .from("news@example.com")
        .to(to)
        .subject("November")
        .text("The news.");
    if list { b.list("november") } else { b }.build().unwrap()
}

pub async fn an_unknown_user_of_a_list_email_is_suppressed<H: Harness>() {
    let sink = SmtpSink::start(SinkOptions {
        rcpt_replies: HashMap::from([
            (
                "gone@example.com".to_owned(),
                "550 5.1.1 <gone@example.com>: Recipient address rejected: User unknown",
            ),
            (
                "receipt-gone@example.com".to_owned(),
                "550 5.1.1 <receipt-gone@example.com>: Recipient address rejected: User unknown",
            ),
            (
                "blocked@example.com".to_owned(),
                "550 5.7.1 Message rejected by policy",
            ),
        ]),
        ..SinkOptions::default()
    })
    .await;
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    for (to, list) in [
        ("gone@example.com", true),
        ("receipt-gone@example.com", false),
        ("blocked@example.com", true),
        ("fine@example.com", true),
    ] {
        let _ = email(to, list).enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let keys = UnsubscribeKeys::new("k1", [7u8; 32]).unwrap();
    let unsubscribe = Unsubscribe::new("https://news.example.com/u/", keys).unwrap();
    // Nothing but the handler: the mailer writes to the list of the outbox it runs in.
    let mailer = Mailer::new(MailerConfig::smtp(smtp).unsubscribe(unsubscribe)).unwrap();
    let outbox = Outbox::new(h.backend()).register::<Email, _>(mailer.handler());
    let admin = Admin::new(h.backend());
    outbox
        .run_until(async {
            for _ in 0..1500 {
                let dead = admin
                    .dead_letters()
                    .count(&DeadLetterFilter::default())
                    .await
                    .unwrap();
                if dead == 3 && !sink.received().is_empty() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("the three refused emails were not dead-lettered within 30 s");
        })
        .await
        .unwrap();
    let listed = admin
        .suppressions()
        .list(&SuppressionFilter::default(), 10, 0)
        .await
        .unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|s| s.address.as_str())
            .collect::<Vec<_>>(),
        ["gone@example.com"],
        "only the list email's unknown user is suppressed: {listed:?}"
    );
    let s = &listed[0];
    assert_eq!(s.scope, SuppressionScope::All);
    assert_eq!(s.reason, SuppressionReason::HardBounce);
    let source = s.source.as_deref().unwrap_or_default();
    assert!(
        source.contains("550 5.1.1") && source.contains("User unknown"),
        "{source}"
    );
    println!("{}: suppressed {} ({source})", H::NAME, s.address);
}

/// A list email for a mailer without `MailerConfig::unsubscribe`: enqueued while the
/// workers run, it is not a dead letter — it waits (no attempt used) with a reason that
/// names the setting, and the transactional email beside it goes out; waiting when a worker
/// starts, the start is refused with that reason; once a mailer with unsubscribe runs,
/// "retry now" sends it.
pub async fn a_list_email_without_unsubscribe_waits_for_the_fix<H: Harness>() {
    let sink = SmtpSink::start(SinkOptions::default()).await;
    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let receipt = email("bob@example.com", false)
        .enqueue(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let smtp = || {
        SmtpConfig::new("127.0.0.1")
            .port(sink.port)
            .command_timeout(Duration::from_secs(5))
    };
    let admin = Admin::new(h.backend());
    let show = |admin: &Admin<H::Backend>, id: &outbox::MessageId| {
        let id = id.clone();
        let admin = admin.clone();
        async move { admin.messages().show(&id).await.unwrap() }
    };
    let without = Mailer::new(MailerConfig::smtp(smtp())).unwrap();
    let mut list = None;
    Outbox::new(h.backend())
        .register::<Email, _>(without.handler())
        .run_until(async {
            // Enqueued after the start: the worker holds it back.
            let mut tx = h.pool().begin().await.unwrap();
            let queued = email("ann@example.com", true)
                .enqueue(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            for _ in 0..1500 {
                let held = show(&admin, queued.id())
                    .await
                    .and_then(|m| m.message.last_error);
                if sink.received().len() == 1 && held.is_some() {
                    list = Some(queued);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("the receipt was not sent, or the list email not held, within 30 s");
        })
        .await
        .unwrap();
    let list = list.unwrap();
    let dead = admin
        .dead_letters()
        .count(&DeadLetterFilter::default())
        .await
        .unwrap();
    assert_eq!(
        dead, 0,
        "a list email without unsubscribe is not a dead letter"
    );
    let held = show(&admin, list.id())
        .await
        .expect("the list email waits")
        .message;
    let why = held.last_error.clone().unwrap_or_default();
    assert!(why.contains("MailerConfig::unsubscribe"), "{why}");
    assert_eq!(held.attempts, 0, "no attempt used: {held:?}");
    assert_eq!(sink.received()[0].rcpt, ["bob@example.com"]);
    assert!(
        show(&admin, receipt.id()).await.is_none(),
        "the receipt was sent"
    );

    // Waiting when a worker without unsubscribe starts: the start is refused, with why.
    let refused = Outbox::new(h.backend())
        .register::<Email, _>(without.handler())
        .run_until(async { panic!("a worker started with a list email it cannot send") })
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("not starting"), "{refused}");
    assert!(refused.contains(list.id().as_str()), "{refused}");
    assert!(refused.contains("MailerConfig::unsubscribe"), "{refused}");
    assert_eq!(sink.received().len(), 1, "nothing more was sent");

    // Fixed: a mailer with unsubscribe sends it as soon as it is retried.
    let keys = UnsubscribeKeys::new("k1", [7u8; 32]).unwrap();
    let unsubscribe = Unsubscribe::new("https://news.example.com/u/", keys).unwrap();
    let with = Mailer::new(MailerConfig::smtp(smtp()).unsubscribe(unsubscribe)).unwrap();
    assert!(admin.messages().retry_now(list.id()).await.unwrap());
    Outbox::new(h.backend())
        .register::<Email, _>(with.handler())
        .run_until(async {
            for _ in 0..1500 {
                if sink.received().len() == 2 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("the list email was not sent after the fix within 30 s");
        })
        .await
        .unwrap();
    assert_eq!(sink.received()[1].rcpt, ["ann@example.com"]);
    println!("{}: held with {why:?}, sent after the fix", H::NAME);
}
