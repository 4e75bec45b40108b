//! An Amazon SES throttle storm on every database. A loopback stand-in for SES v2's
//! `SendEmail` (`POST /v2/email/outbound-emails`, following AWS's "SendEmail" API reference:
//! 200 `{"MessageId"}`; a throttled call 429 with the error type in `x-amzn-ErrorType`,
//! `TooManyRequestsException`, and `{"message": ...}`, no `Retry-After`) refuses every third
//! call. The outbox shapes by the provider (`Shaping::one_site(mailer.site())`): every email
//! arrives exactly once, none is a dead letter, no email spent an attempt on a refusal (a
//! "too many requests" is not an attempt), and the provider's site is slowed in the
//! database. SES names no wait, so each throttle halves the rate this process got through
//! (at least one email a second): the storm, which refuses every third call whatever the
//! pace, keeps the site near one a second, and 30 emails take about 30 s.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use axum::{body::Bytes, extract::State, http::StatusCode, routing::post, Router};
use outbox::{
    prelude::*,
    smtp::{Email, Mailer, MailerConfig, SesConfig},
    store::{Now, ShapingStore},
    DeadLetterFilter, Retention, Shaping,
};

use super::harness::Harness;

/// Emails in the storm.
const EMAILS: usize = 30;

#[derive(Clone, Default)]
struct Ses {
    calls: Arc<AtomicUsize>,
    /// Recipients of the accepted emails, with how often each came.
    accepted: Arc<Mutex<BTreeMap<String, usize>>>,
}

async fn send_email(
    State(ses): State<Ses>,
    body: Bytes,
) -> (StatusCode, [(&'static str, String); 2], String) {
    let call = ses.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let json = ("content-type", "application/json".to_owned());
    if call % 3 == 0 {
        let kind = (
            "x-amzn-errortype",
            "TooManyRequestsException:http://internal.amazon.com/coral/com.amazonaws.sesv2/"
                .to_owned(),
        );
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [json, kind],
            r#"{"message":"Maximum sending rate exceeded."}"#.to_owned(),
        );
    }
    let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let to: Vec<String> = request["Destination"]["ToAddresses"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut accepted = ses.accepted.lock().unwrap();
    for address in to {
        *accepted.entry(address).or_default() += 1;
    }
    let id = ("x-amzn-requestid", format!("req-{call}"));
    (
        StatusCode::OK,
        [json, id],
        format!(r#"{{"MessageId":"ses-{call:06}"}}"#),
    )
}

/// Every third call throttled: all delivered once, none dead, none spent an attempt on a
/// throttle, the site `api:ses` slowed.
pub async fn an_ses_throttle_storm_loses_nothing_and_slows_the_providers_site<H: Harness>() {
    let ses = Ses::default();
    let app = Router::new()
        .route("/v2/email/outbound-emails", post(send_email))
        .with_state(ses.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let h = H::new().await;
    let mut tx = h.pool().begin().await.unwrap();
    let mut ids = Vec::new();
    for i in 0..EMAILS {
        let email = Email::builder()
            .from("shop@example.com")
            .to(format!("buyer{i}@example.org"))
            .subject("Your order")
            .text("Thanks.")
            .build()
            .unwrap();
        ids.push(email.enqueue(&mut *tx).await.unwrap().id().to_string());
    }
    tx.commit().await.unwrap();

    let config = SesConfig::new("eu-west-1")
        .host("127.0.0.1", Some(port))
        .plain_http()
        .credentials(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
        );
    let mailer = Mailer::new(MailerConfig::ses(config)).unwrap();
    let site = mailer.site().expect("an API transport has a site");
    assert_eq!(site, "api:ses");
    let outbox = Outbox::new(h.backend())
        .retention(Retention::keep_for(Duration::from_secs(3600)))
        .shaping(Shaping::new().one_site(&site))
        .register_with::<Email, _>(mailer.handler(), QueueOptions::new().concurrency(8));
    let admin = outbox.admin();
    let backend = h.backend();
    outbox
        .run_until(async {
            let done = super::cases::eventually(Duration::from_secs(120), || async {
                ses.accepted.lock().unwrap().len() == EMAILS
            })
            .await;
            assert!(
                done,
                "{} of {EMAILS} emails arrived",
                ses.accepted.lock().unwrap().len()
            );
        })
        .await
        .unwrap();

    let accepted = ses.accepted.lock().unwrap().clone();
    assert_eq!(accepted.len(), EMAILS, "every email arrived");
    assert!(
        accepted.values().all(|n| *n == 1),
        "each exactly once: {accepted:?}"
    );
    let calls = ses.calls.load(Ordering::SeqCst);
    assert!(
        calls >= EMAILS + EMAILS / 2 - 1,
        "every third call was throttled: {calls} calls"
    );
    let dead = admin
        .dead_letters()
        .count(&DeadLetterFilter::all())
        .await
        .unwrap();
    assert_eq!(dead, 0, "no email is a dead letter for a throttle");
    for id in &ids {
        assert_eq!(
            h.attempts(id).await,
            1,
            "a throttle is not an attempt ({id})"
        );
    }
    let sites = backend.sites(Now::Database).await.unwrap();
    let ses_site = sites
        .iter()
        .find(|s| s.site == site)
        .expect("the provider's site is in the database");
    assert!(
        ses_site.slowed_until.is_some()
            && ses_site
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("TooManyRequests")),
        "the provider's site was slowed: {ses_site:?}"
    );
    println!(
        "{} on {}: {EMAILS} emails, {calls} calls ({} throttled), site {:?} slowed to {:?}/s",
        site,
        H::NAME,
        calls - EMAILS,
        ses_site.site,
        ses_site.slow_per_second
    );
}
