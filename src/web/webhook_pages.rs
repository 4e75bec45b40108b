//! The webhook endpoints' page (`/webhooks`, feature `webhook`): every endpoint with its
//! URL, state (disabled since when and why), failure clock, number of signing secrets and
//! a link to its queued messages (the live messages of its group `webhook:<name>`), with
//! forms to disable it (with a reason), enable it, rotate its secret and retire its old
//! secrets. A rotation's new verifying key is shown once, on the page the form leads to
//! (never in a URL, and the response is not cached).

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
                    thead { tr { th { "Name" } th { "URL" } th { "State" } th { "Failing since" } th.n { "Secrets" } th { "Messages" } th {} } }
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
                                } }
                            }
                        }
                    }
                }
            }
            p.small.muted { "Disabling an endpoint parks its messages, queued and new, in its group (they are not dead letters); enabling it lets them go. Rotating adds a secret: every key signs each delivery until the old ones are retired, so the receiver can move to the new key at its own pace." }
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
