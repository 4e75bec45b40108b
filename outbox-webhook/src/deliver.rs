//! The webhook kind's handler: reads the endpoint (cached for a second), signs the event,
//! POSTs it through the SSRF-safe client and turns the answer into the outbox's failure
//! classes; disables endpoints that answer `410 Gone` or have only failed for too long.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use futures::future::BoxFuture;
use hyper::body::Bytes;
use outbox_core::{store::Backend, Admin, Handler, HandlerError, MessageContext};

use crate::{
    classify::{classify, Verdict},
    client::WebhookClient,
    endpoint::{WebhookEndpoint, WebhookEndpoints},
    message::Webhook,
    signature::{Signer, WebhookId},
};

/// How long an endpoint as read is used before it is read again (a disabled endpoint, a
/// new URL or a rotated secret applies within this long).
pub const ENDPOINT_TTL: Duration = Duration::from_secs(1);

/// How long an endpoint may only fail before it is disabled, by default (five days).
pub const DISABLE_AFTER: Duration = Duration::from_secs(5 * 24 * 3600);

/// How long a message to a disabled endpoint waits before it looks again, when it was not
/// enqueued in its endpoint's group (which is paused while the endpoint is disabled, and
/// holds the others).
const DISABLED_WAIT: Duration = Duration::from_secs(60);

/// How long a message that found its endpoint gone waits before its paused group holds it.
const PARKED_WAIT: Duration = Duration::from_secs(1);

/// Most endpoints kept in the cache; past it the cache starts over.
const CACHE_MAX: usize = 10_000;

/// An endpoint as read, ready to sign.
struct Ready {
    endpoint: WebhookEndpoint,
    signer: Option<Signer>,
}

/// The endpoints as last read, by name, with when.
type Cache = HashMap<String, (Instant, Option<Arc<Ready>>)>;

/// Delivers [`Webhook`] messages: register it as the handler of the type
/// (`outbox.register::<Webhook, _>(sender)`).
#[derive(Clone)]
pub struct WebhookSender<B> {
    inner: Arc<Inner<B>>,
}

struct Inner<B> {
    endpoints: WebhookEndpoints<B>,
    client: WebhookClient,
    disable_after: Duration,
    cache: Mutex<Cache>,
}

impl<B: Backend> WebhookSender<B> {
    /// A sender that reads endpoints through `admin` and delivers with `client` (its
    /// address policy, timeouts and resolver).
    pub fn new(admin: &Admin<B>, client: WebhookClient) -> Self {
        Self {
            inner: Arc::new(Inner {
                endpoints: WebhookEndpoints::new(admin),
                client,
                disable_after: DISABLE_AFTER,
                cache: Mutex::default(),
            }),
        }
    }

    /// Disables an endpoint whose deliveries have all failed for `after` (default five
    /// days), with one WARN; its messages wait, parked, until it is enabled.
    pub fn disable_after(self, after: Duration) -> Self {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            endpoints: shared.endpoints.clone(),
            client: shared.client.clone(),
            disable_after: shared.disable_after,
            cache: Mutex::default(),
        });
        Self {
            inner: Arc::new(Inner {
                disable_after: after,
                ..inner
            }),
        }
    }

    /// The endpoints it delivers to.
    pub fn endpoints(&self) -> &WebhookEndpoints<B> {
        &self.inner.endpoints
    }

    /// Endpoint `name` as last read (read again after [`ENDPOINT_TTL`]).
    async fn ready(&self, name: &str) -> Result<Option<Arc<Ready>>, HandlerError> {
        if let Some((at, ready)) = self.cache().get(name) {
            if at.elapsed() < ENDPOINT_TTL {
                return Ok(ready.clone());
            }
        }
        let read = self.inner.endpoints.get(name).await.map_err(|e| match e {
            outbox_core::Error::Config(why) => HandlerError::permanent(why),
            other => HandlerError::retry(format!("cannot read webhook endpoint `{name}`: {other}")),
        })?;
        let ready = read.map(|endpoint| {
            let signer = Signer::new(endpoint.signing_keys()).ok();
            Arc::new(Ready { endpoint, signer })
        });
        let mut cache = self.cache();
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(name.to_owned(), (Instant::now(), ready.clone()));
        Ok(ready)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.inner.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn forget(&self, name: &str) {
        self.cache().remove(name);
    }

    /// Delivers `message` (outbox message `id`, enqueued at `enqueued`).
    async fn deliver(
        &self,
        message: Webhook,
        id: String,
        enqueued: Option<SystemTime>,
        group: Option<String>,
    ) -> Result<(), HandlerError> {
        let name = &message.endpoint;
        let Some(ready) = self.ready(name).await? else {
            return Err(HandlerError::permanent(format!(
                "no webhook endpoint `{name}`: it was removed (or never created)"
            )));
        };
        let endpoint = &ready.endpoint;
        if let Some((_, reason)) = &endpoint.disabled {
            // Claimed before its group was paused, or enqueued outside it, or the endpoint
            // was disabled without its group: the group is made to follow the endpoint as
            // stored now (never from this cached reading), then the message waits — held by
            // the paused group, or looking again later when it is outside it.
            self.forget(name);
            let still = self.inner.endpoints.park(name).await.unwrap_or(true);
            let in_group = group.as_deref() == Some(message.group().as_str());
            let wait = if in_group || !still {
                PARKED_WAIT
            } else {
                DISABLED_WAIT
            };
            return Err(HandlerError::snooze_because(
                wait,
                format!(
                    "webhook endpoint `{name}` is disabled ({reason}): parked until it is enabled"
                ),
            ));
        }
        let Some(signer) = &ready.signer else {
            return Err(HandlerError::permanent(format!(
                "webhook endpoint `{name}` has no usable signing secret: rotate one in \
                 (WebhookEndpoints::rotate)"
            )));
        };
        let body = body_of(&message, enqueued);
        let webhook_id = WebhookId::new(id.as_str())
            .map_err(|e| HandlerError::permanent(format!("message id `{id}`: {e}")))?;
        let now = SystemTime::now();
        let timestamp = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let headers = signer.headers(&webhook_id, timestamp, &body).into_pairs();
        let started = Instant::now();
        let answer = self
            .inner
            .client
            .post(&endpoint.url, &headers, Bytes::from(body))
            .await;
        let elapsed = started.elapsed();
        // Its origin only: paths often carry a token (chat services' incoming webhooks).
        let shown = crate::endpoint::shown_url(&endpoint.url);
        let url = shown.as_str();
        let verdict = classify(url, &answer, SystemTime::now());
        let outcome = match &verdict {
            Verdict::Delivered => "delivered",
            Verdict::Gone(_) => "gone",
            Verdict::Failed(e) => match e.kind() {
                outbox_core::HandlerErrorKind::DestinationDown => "down",
                outbox_core::HandlerErrorKind::SlowDown { .. } => "throttled",
                outbox_core::HandlerErrorKind::Permanent => "refused",
                _ => "failed",
            },
        };
        metrics::counter!("outbox_webhook_deliveries", "endpoint" => name.clone(), "outcome" => outcome)
            .increment(1);
        metrics::histogram!("outbox_webhook_seconds", "endpoint" => name.clone())
            .record(elapsed.as_secs_f64());
        match verdict {
            Verdict::Delivered => {
                if endpoint.failing_since.is_some() {
                    let _ = self.inner.endpoints.health(name, false).await;
                    self.forget(name);
                }
                Ok(())
            }
            Verdict::Gone(said) => {
                let reason = format!("the receiver answered 410 Gone ({})", first_line(&said));
                tracing::warn!(
                    endpoint = %name, url,
                    "webhook endpoint disabled: it answered 410 Gone; its messages wait until it is enabled"
                );
                self.inner
                    .endpoints
                    .disable(name, &reason)
                    .await
                    .map_err(|e| {
                        HandlerError::retry(format!("{said}; cannot disable the endpoint: {e}"))
                    })?;
                self.forget(name);
                // Back in the queue at once, where its paused group holds it.
                Err(HandlerError::snooze_because(
                    PARKED_WAIT,
                    format!("{said}\n(endpoint `{name}` disabled: parked until it is enabled)"),
                ))
            }
            Verdict::Failed(error) => {
                self.failed(name, endpoint, url).await;
                Err(error)
            }
        }
    }

    /// A delivery to `name` failed: its failure clock starts, and an endpoint failing for
    /// longer than allowed is disabled.
    async fn failed(&self, name: &str, endpoint: &WebhookEndpoint, url: &str) {
        let Some(since) = endpoint.failing_since else {
            if self.inner.endpoints.health(name, true).await.is_ok() {
                self.forget(name);
            }
            return;
        };
        let failing_for = SystemTime::now().duration_since(since).unwrap_or_default();
        if failing_for < self.inner.disable_after {
            return;
        }
        let reason = format!(
            "every delivery failed for {} (since {})",
            outbox_core::units::duration(Duration::from_secs(failing_for.as_secs())),
            httpdate::fmt_http_date(since)
        );
        if let Ok(true) = self.inner.endpoints.disable(name, &reason).await {
            tracing::warn!(
                endpoint = %name, url, %reason,
                "webhook endpoint disabled; its messages wait until it is enabled"
            );
        }
        self.forget(name);
    }
}

impl<B: Backend, S: Send + Sync + 'static> Handler<Webhook, S> for WebhookSender<B> {
    fn call(
        &self,
        message: Webhook,
        ctx: MessageContext<S>,
    ) -> BoxFuture<'static, Result<(), HandlerError>> {
        let this = self.clone();
        let id = ctx.id().to_string();
        let enqueued = ctx.enqueued_at();
        let group = ctx.group().map(str::to_owned);
        Box::pin(async move { this.deliver(message, id, enqueued, group).await })
    }
}

/// The body sent: `{"type", "timestamp", "data"}`, the same bytes on every attempt.
pub fn body_of(message: &Webhook, enqueued: Option<SystemTime>) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        #[serde(rename = "type")]
        event_type: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        timestamp: Option<String>,
        data: &'a serde_json::Value,
    }
    serde_json::to_vec(&Body {
        event_type: &message.event_type,
        timestamp: enqueued.map(rfc3339),
        data: &message.data,
    })
    .unwrap_or_else(|_| b"{}".to_vec())
}

/// `t` as RFC 3339 in UTC with milliseconds: `2026-11-28T03:29:00.123Z`.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_843_740_123);
        assert_eq!(rfc3339(t), "2026-11-28T05:29:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
