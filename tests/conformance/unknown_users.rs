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
        email(to, list).enqueue(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    let smtp = SmtpConfig::new("127.0.0.1")
        .port(sink.port)
        .command_timeout(Duration::from_secs(5));
    let keys = UnsubscribeKeys::new("k1", [7u8; 32]).unwrap();
    let unsubscribe = Unsubscribe::new("https://news.example.com/u/", keys).unwrap();
    let outbox = Outbox::new(h.backend());
    let mailer = Mailer::new(MailerConfig::smtp(smtp).unsubscribe(unsubscribe))
        .unwrap()
        .suppress_into(outbox.admin().suppressions());
    let outbox = outbox.register::<Email, _>(mailer.handler());
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
