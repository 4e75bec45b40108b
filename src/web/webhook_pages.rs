//! The webhook endpoints' page (`/webhooks`, feature `webhook`): every endpoint with its
//! URL, state (disabled since when and why), failure clock, number of signing secrets and
//! whether its events go in order and a link to its queued messages (the live messages of
//! its group `webhook:<name>`), with forms to disable it (with a reason), enable it, rotate
//! its secret, retire its old secrets, replay its delivered events (all those kept for the
//! retention window, or those delivered since a time ago) and turn ordered delivery on or
//! off. A rotation's new verifying key is shown once, on the page the form leads to (never
//! in a URL, and the response is not cached).

use std::time::{Duration, SystemTime};

use axum::{
    extract::{Query, State as AxumState},
    response::IntoResponse,
    Extension, Form,
};
use maud::html;
use serde::Deserialize;

use super::{
    layout::{self, page, Ctx, Flash, Nav},
    pages::{done, q, PageResult, St},
};
use crate::{
    backend::Backend,
    store::Endpoint,
    webhook::{message::group_of, signature::Algorithm, WebhookEndpoint, WebhookEndpoints, KIND},
};

/// The page the forms come back to.
const HERE: &str = "/webhooks";

/// GET `/webhooks`.
pub(crate) async fn webhooks_page<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let stored = state.admin.endpoints(KIND).list().await?;
    let body = html! {
        section {
            @if stored.is_empty() {
                p.muted #no-webhooks { "No webhook endpoint is stored: the application creates them (" code { "WebhookEndpoints::create" } ")." }
            } @else {
                table #webhooks {
                    thead { tr { th { "Name" } th { "URL" } th { "State" } th { "Failing since" } th.n { "Secrets" } th { "Ordered" } th { "Messages" } th {} } }
                    tbody {
                        @for e in &stored {
                            @let read = WebhookEndpoint::from_stored(e);
                            tr data-endpoint=(e.name) data-enabled=(e.is_enabled()) {
                                td { code { (e.name) } }
                                td.small {
                                    @match &read {
                                        Ok(w) => { (w.url.as_str()) },
                                        Err(why) => span.dead { "unreadable: " (why) },
                                    }
                                }
                                td.small { (state_cell(e)) }
                                td.nowrap {
                                    @match e.failing_since {
                                        Some(t) => span title=(layout::ago(t)) { (layout::timestamp(t)) },
                                        None => "-",
                                    }
                                }
                                td.n { @match &read { Ok(w) => (w.secrets.len()), Err(_) => "?" } }
                                td { @match &read { Ok(w) => { @if w.ordered { "yes" } @else { "no" } }, Err(_) => "?" } }
                                td.nowrap { a href=(ctx.url(&format!("/messages?group={}", q(&group_of(&e.name))))) { "Queued messages" } }
                                td { div.actions.stack {
                                    @if e.is_enabled() {
                                        (ctx.form("/webhooks/disable", HERE, html! {
                                            input type="hidden" name="name" value=(e.name);
                                            input type="text" name="reason" placeholder="reason" size="14" aria-label="reason";
                                            button.danger type="submit" { "Disable" }
                                        }))
                                    } @else {
                                        (ctx.form("/webhooks/enable", HERE, html! {
                                            input type="hidden" name="name" value=(e.name);
                                            button type="submit" { "Enable" }
                                        }))
                                    }
                                    (ctx.form("/webhooks/rotate", HERE, html! {
                                        input type="hidden" name="name" value=(e.name);
                                        button type="submit" { "Rotate secret" }
                                    }))
                                    @if read.as_ref().is_ok_and(|w| w.secrets.len() > 1) {
                                        (ctx.form("/webhooks/retire", HERE, html! {
                                            input type="hidden" name="name" value=(e.name);
                                            button type="submit" { "Retire old secrets" }
                                        }))
                                    }
                                    (ctx.form("/webhooks/replay", HERE, html! {
                                        input type="hidden" name="name" value=(e.name);
                                        input type="text" name="since" placeholder="since, e.g. 1h" size="10" aria-label="delivered since (empty: every kept event)" title="Delivered within this long ago (30m, 1h, 2d); empty: every event kept for the retention window";
                                        button type="submit" { "Replay" }
                                    }))
                                    @if let Ok(w) = &read {
                                        (ctx.form("/webhooks/ordered", HERE, html! {
                                            input type="hidden" name="name" value=(e.name);
                                            @if w.ordered {
                                                input type="hidden" name="ordered" value="off";
                                                button type="submit" { "Stop ordering" }
                                            } @else {
                                                input type="hidden" name="ordered" value="on";
                                                button type="submit" { "Deliver in order" }
                                            }
                                        }))
                                    }
                                } }
                            }
                        }
                    }
                }
            }
            p.small.muted { "Disabling an endpoint parks its messages, queued and new, in its group (they are not dead letters); enabling it lets them go. Rotating adds a secret: every key signs each delivery until the old ones are retired, so the receiver can move to the new key at its own pace. Replay sends the endpoint's delivered events again (those delivered within the time given, e.g. " code { "1h" } ", or every one when empty) with their webhook-id: only events kept for the retention window (" code { "Retention::keep_for" } ") can be. An ordered endpoint gets its events one at a time, in enqueue order (a failing one holds the next); the setting applies to events enqueued from then on." }
        }
    };
    Ok(page(
        &ctx,
        Some(Nav::Webhooks),
        "Webhook endpoints",
        &flash,
        html! {},
        body,
    )
    .into_response())
}

/// `enabled`, or `disabled since T: reason` (stored text; maud escapes it).
fn state_cell(e: &Endpoint) -> maud::Markup {
    html! {
        @match e.disabled_at {
            None => "enabled",
            Some(at) => {
                span.badge.paused { "disabled" }
                " since " (layout::timestamp(at)) ": " (e.disabled_reason.as_deref().unwrap_or(""))
            }
        }
    }
}

/// A form naming one endpoint.
#[derive(Deserialize)]
pub(crate) struct NameForm {
    #[serde(default)]
    back: String,
    name: String,
}

/// The disable form.
#[derive(Deserialize)]
pub(crate) struct DisableForm {
    #[serde(default)]
    back: String,
    name: String,
    #[serde(default)]
    reason: String,
}

/// The replay form.
#[derive(Deserialize)]
pub(crate) struct ReplayForm {
    #[serde(default)]
    back: String,
    name: String,
    /// Delivered within this long ago (`1h`); empty: every kept event.
    #[serde(default)]
    since: String,
}

/// The ordered toggle.
#[derive(Deserialize)]
pub(crate) struct OrderedForm {
    #[serde(default)]
    back: String,
    name: String,
    /// `on` or `off`.
    #[serde(default)]
    ordered: String,
}

/// The refusal for an endpoint that is not stored.
fn unknown(name: &str) -> String {
    format!("There is no webhook endpoint {name}.")
}

/// POST `/webhooks/disable`.
pub(crate) async fn webhook_disable<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<DisableForm>,
) -> PageResult {
    let reason = match form.reason.trim() {
        "" => "disabled from the web admin",
        r => r,
    };
    let endpoints = WebhookEndpoints::new(&state.admin);
    let outcome = match endpoints.disable(&form.name, reason).await? {
        true => Ok(format!(
            "Disabled webhook endpoint {} ({reason}): its messages wait in group {} until it is \
             enabled.",
            form.name,
            group_of(&form.name)
        )),
        false => Err(unknown(&form.name)),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// POST `/webhooks/enable`.
pub(crate) async fn webhook_enable<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<NameForm>,
) -> PageResult {
    let endpoints = WebhookEndpoints::new(&state.admin);
    let outcome = match endpoints.enable(&form.name).await? {
        true => Ok(format!(
            "Enabled webhook endpoint {}: its parked messages go out, and its failure clock \
             starts over.",
            form.name
        )),
        false => Err(unknown(&form.name)),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// POST `/webhooks/retire`.
pub(crate) async fn webhook_retire<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<NameForm>,
) -> PageResult {
    if state.admin.endpoints(KIND).get(&form.name).await?.is_none() {
        return Ok(done(&ctx, &form.back, Err(unknown(&form.name))));
    }
    let retired = WebhookEndpoints::new(&state.admin)
        .retire_old_secrets(&form.name)
        .await?;
    let outcome = match retired {
        0 => Ok(format!("{} has no old secret: nothing retired.", form.name)),
        n => Ok(format!(
            "Retired {n} old secret(s) of {}: deliveries are signed by its newest key alone.",
            form.name
        )),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// POST `/webhooks/rotate`: the new verifying key, shown on this response alone (a
/// redirect would carry it in a URL, into the browser's history and the logs).
pub(crate) async fn webhook_rotate<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<NameForm>,
) -> PageResult {
    if state.admin.endpoints(KIND).get(&form.name).await?.is_none() {
        return Ok(done(&ctx, &form.back, Err(unknown(&form.name))));
    }
    let endpoints = WebhookEndpoints::new(&state.admin);
    let new = endpoints.rotate(&form.name).await?;
    let secrets = endpoints
        .get(&form.name)
        .await
        .ok()
        .flatten()
        .map_or(1, |e| e.secrets.len());
    let algorithm = match new.algorithm {
        Algorithm::HmacSha256 => "HMAC-SHA256",
        Algorithm::Ed25519 => "Ed25519",
    };
    let body = html! {
        section #rotated {
            p { "Webhook endpoint " code { (form.name) } " has a new " (algorithm) " secret: every delivery is now signed by its " (secrets) " key(s)." }
            p { strong { "Give the receiver this key now: it is shown once." } }
            pre #new-key { (new.verify_with) }
            p.small.muted {
                @match new.algorithm {
                    Algorithm::HmacSha256 => "An HMAC secret is both what signs and what verifies: keep it as secret as a password.",
                    Algorithm::Ed25519 => "The Ed25519 public key verifies the signatures; the secret key stays in the database.",
                }
                " Once the receiver verifies with it, retire the old secrets on the endpoints' page. Reloading this page would rotate again."
            }
            p { a #back href=(ctx.url(HERE)) { "← Webhook endpoints" } }
        }
    };
    let title = format!("New secret for {}", form.name);
    Ok(page(
        &ctx,
        Some(Nav::Webhooks),
        &title,
        &Flash::default(),
        html! {},
        body,
    )
    .into_response())
}

/// POST `/webhooks/replay`: the endpoint's delivered events kept for the retention window
/// (those delivered within `since` ago, or all) are queued again; the banner says how many.
pub(crate) async fn webhook_replay<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<ReplayForm>,
) -> PageResult {
    if state.admin.endpoints(KIND).get(&form.name).await?.is_none() {
        return Ok(done(&ctx, &form.back, Err(unknown(&form.name))));
    }
    let since = match parse_ago(&form.since) {
        Ok(since) => since,
        Err(why) => return Ok(done(&ctx, &form.back, Err(why))),
    };
    let after = match since {
        Some(d) => match SystemTime::now().checked_sub(d) {
            Some(t) => Some(t),
            None => {
                let why = format!(
                    "{} ago is before 1970: give a shorter time.",
                    form.since.trim()
                );
                return Ok(done(&ctx, &form.back, Err(why)));
            }
        },
        None => None,
    };
    let replayed = WebhookEndpoints::new(&state.admin)
        .replay(&form.name, after, None)
        .await?;
    let (what, range) = match since {
        None => ("delivered event", String::new()),
        Some(d) => (
            "event",
            format!(" delivered in the last {}", layout::duration(d)),
        ),
    };
    let outcome = match replayed {
        0 => Ok(format!(
            "No {what} of {}{range} was queued again: only delivered events kept for the \
             retention window (Retention::keep_for) can be replayed.",
            form.name
        )),
        n => Ok(format!(
            "Queued again {n} {what}(s) of {}{range}: they go out with their webhook-id.",
            form.name
        )),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// POST `/webhooks/ordered`: ordered delivery on or off for the events enqueued from now on.
pub(crate) async fn webhook_ordered<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<OrderedForm>,
) -> PageResult {
    if state.admin.endpoints(KIND).get(&form.name).await?.is_none() {
        return Ok(done(&ctx, &form.back, Err(unknown(&form.name))));
    }
    let ordered = match form.ordered.as_str() {
        "on" => true,
        "off" => false,
        other => {
            let why = format!("Ordered is on or off, not {other}.");
            return Ok(done(&ctx, &form.back, Err(why)));
        }
    };
    WebhookEndpoints::new(&state.admin)
        .set_ordered(&form.name, ordered)
        .await?;
    let outcome = Ok(match ordered {
        true => format!(
            "{} is ordered: its events enqueued from now on are delivered one at a time, in \
             enqueue order (a failing one holds the next).",
            form.name
        ),
        false => format!(
            "{} is not ordered: its events enqueued from now on go out as fast as its host's \
             limits allow.",
            form.name
        ),
    });
    Ok(done(&ctx, &form.back, outcome))
}

/// A time ago as the replay form takes it: empty for none, else numbers with units, e.g.
/// `30m`, `1h`, `1h 30m`, `2d` (`s`, `m`/`min`, `h`, `d`, `w`).
fn parse_ago(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let refuse = || {
        let shown: String = text.chars().take(40).collect();
        format!("{shown} is not a time: write e.g. 30m, 1h, 2d (or nothing for every kept event).")
    };
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(refuse());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| refuse())?;
        rest = &rest[digits..];
        let letters = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let unit = match &rest[..letters] {
            "s" | "sec" | "secs" => 1,
            "m" | "min" | "mins" => 60,
            "h" | "hr" | "hrs" => 3_600,
            "d" | "days" | "day" => 86_400,
            "w" | "week" | "weeks" => 604_800,
            _ => return Err(refuse()),
        };
        rest = rest[letters..].trim_start();
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(refuse)?;
    }
    if total == 0 {
        return Err(refuse());
    }
    Ok(Some(Duration::from_secs(total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_ago_parse() {
        let secs = |t: &str| parse_ago(t).map(|d| d.map(|d| d.as_secs()));
        assert_eq!(secs(""), Ok(None));
        assert_eq!(secs("  "), Ok(None));
        assert_eq!(secs("1h"), Ok(Some(3_600)));
        assert_eq!(secs("90m"), Ok(Some(5_400)));
        assert_eq!(secs("1h 30m"), Ok(Some(5_400)));
        assert_eq!(secs("1h30min"), Ok(Some(5_400)));
        assert_eq!(secs("2d"), Ok(Some(172_800)));
        for bad in ["1", "h", "1x", "0m", "-1h", "1.5h", "99999999999999999999w"] {
            assert!(secs(bad).is_err(), "{bad}");
        }
    }
}
