//! The pages of groups (campaigns) and live messages, and their actions: pause, resume
//! and cancel a group; retry now and cancel messages, one by one or for a filter.

use std::time::SystemTime;

use axum::{
    extract::{Path, Query, State as AxumState},
    http::StatusCode,
    response::{IntoResponse, Response},
    Extension, Form,
};
use maud::{html, Markup};
use serde::Deserialize;

use super::{
    layout::{self, page, Ctx, Flash, Nav},
    pages::{done, first_line, q, respond, seg, Back, Live, PageResult, St, WebError},
};
use crate::{backend::Backend, GroupProgress, LiveFilter, LiveMessage, LiveState, MessageId};

/// Live messages per page of the list.
const PAGE_SIZE: u32 = 50;

/// The reason a group paused from the admin gets when none is given.
const DEFAULT_REASON: &str = "paused from the web admin";

/// `1 message`, `2 messages`.
fn messages(n: u64) -> String {
    format!("{n} message{}", if n == 1 { "" } else { "s" })
}

/// The share of `part` in `total`, in percent (for a bar's width).
fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// A group's progress bar: delivered, dead, cancelled, and what remains, of the total.
fn progress_bar(g: &GroupProgress) -> Markup {
    let total = g.total();
    let label = format!(
        "{} delivered, {} dead, {} cancelled, {} remaining of {total}",
        g.delivered,
        g.dead,
        g.cancelled,
        g.remaining()
    );
    html! {
        div.bar role="img" aria-label=(label) title=(label) {
            @for (class, n) in [("s-delivered", g.delivered), ("s-dead", g.dead), ("s-cancelled", g.cancelled)] {
                @if n > 0 {
                    span class=(class) style={ "width:" (format!("{:.2}", share(n, total))) "%" } {}
                }
            }
        }
    }
}

/// The bar's colours, explained.
fn legend() -> Markup {
    html! {
        p.legend.small.muted {
            span.s-delivered {} "delivered" span.s-dead {} "dead" span.s-cancelled {} "cancelled"
            span.s-remaining {} "remaining"
        }
    }
}

/// A rate, `–` when nothing was delivered lately.
fn rate(per_second: f64) -> Markup {
    html! {
        @if per_second > 0.0 { (crate::units::rate(per_second)) } @else { span.muted { "–" } }
    }
}

/// The ETA at the current rate, `–` when there is none.
fn eta(g: &GroupProgress) -> Markup {
    html! {
        @match g.eta() {
            Some(d) if d.as_secs() == 0 => "under 1s",
            Some(d) => (layout::duration(d)),
            None => span.muted { "–" },
        }
    }
}

/// `6 of 10 finished (60%)`: delivered, dead or cancelled, of the total.
fn finished(g: &GroupProgress) -> String {
    let total = g.total();
    let done = total - g.remaining();
    format!(
        "{done} of {total} finished ({}%)",
        (share(done, total)).floor()
    )
}

/// The paused badge with its reason, `finished`, or `running`.
fn group_state(g: &GroupProgress) -> Markup {
    html! {
        @if g.is_paused() {
            @let reason = g.pause_reason.as_deref().unwrap_or("");
            span.badge.paused title=(reason) { "paused" } " " span.small.muted { (reason) }
        } @else if g.remaining() == 0 {
            span.muted.small { "finished" }
        } @else {
            span.muted.small { "running" }
        }
    }
}

/// Pause (with an optional reason) or resume, and cancel with a tick.
fn group_actions(ctx: &Ctx, g: &GroupProgress, back: &str) -> Markup {
    let base = format!("/groups/{}", seg(&g.name));
    let queued = g.remaining() - g.running;
    html! {
        div.actions.stack {
            @if g.is_paused() {
                (ctx.form(&format!("{base}/resume"), back, html! {
                    button type="submit" { "Resume" }
                }))
            } @else {
                (ctx.form(&format!("{base}/pause"), back, html! {
                    input type="text" name="reason" placeholder="reason" size="12" aria-label="reason";
                    button type="submit" { "Pause" }
                }))
            }
            @if queued > 0 {
                (ctx.form(&format!("{base}/cancel"), back, html! {
                    label.small { input type="checkbox" name="confirm" value="yes" required; " sure" }
                    button.danger type="submit" { "Cancel " (queued) }
                }))
            }
        }
    }
}

/// GET `/groups`: every group with its progress and actions.
pub(crate) async fn groups_list<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let groups = state.admin.groups().list().await?;
    let back = "/groups";
    let body = html! {
        section {
            @if groups.is_empty() {
                p.muted { "No groups yet: messages enqueued with a group (EnqueueOptions::group) show here." }
            } @else {
                (legend())
                table #group-progress {
                    thead { tr {
                        th { "Group" } th { "Progress" } th.n { "Pending" } th.n { "Scheduled" }
                        th.n { "Running" } th.n { "Retrying" } th.n { "Paused" } th.n { "Delivered" }
                        th.n { "Dead" } th.n { "Cancelled" } th.n { "Suppressed" } th.n { "Rate · ETA" } th {}
                    } }
                    tbody {
                        @for g in &groups {
                            tr data-group=(g.name) {
                                td {
                                    a href=(ctx.url(&format!("/groups/{}", seg(&g.name)))) { strong { (g.name) } }
                                    div data-col="state" { (group_state(g)) }
                                }
                                td {
                                    (progress_bar(g))
                                    div.small.muted data-col="finished" { (finished(g)) }
                                }
                                td.n data-col="pending" { (g.pending) }
                                td.n data-col="scheduled" { (g.scheduled) }
                                td.n data-col="running" { (g.running) }
                                td.n data-col="retrying" { (g.retrying) }
                                td.n data-col="paused" { (g.paused) }
                                td.n data-col="delivered" { (g.delivered) }
                                td.n data-col="dead" { (g.dead) }
                                td.n data-col="cancelled" { (g.cancelled) }
                                td.n data-col="suppressed" { (g.suppressed) }
                                td.n.nowrap {
                                    div data-col="rate" { (rate(g.rate)) }
                                    div.small.muted data-col="eta" { "ETA " (eta(g)) }
                                }
                                td { (group_actions(&ctx, g, back)) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(&ctx, Some(Nav::Groups), "Groups", &flash, html! {}, body).into_response())
}

/// GET `/groups/{name}`: one group; its figures refresh.
pub(crate) async fn group_page<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
    Query(live_only): Query<Live>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let Some(g) = state.admin.groups().show(&name).await? else {
        return Err(WebError(
            StatusCode::NOT_FOUND,
            format!("There is no group {name}: nothing was enqueued into it, paused or recorded."),
        ));
    };
    let back = format!("/groups/{}", seg(&name));
    let live = html! {
        section #group-figures {
            (progress_bar(&g))
            (legend())
            dl {
                dt { "State" } dd data-col="state" { (group_state(&g)) }
                @if let Some(at) = g.paused_at { dt { "Paused" } dd { (layout::timestamp(at)) " (" (layout::ago(at)) ")" } }
                dt { "Finished" } dd data-col="finished" { (finished(&g)) }
                dt { "Pending" } dd data-col="pending" { (g.pending) }
                dt { "Scheduled" } dd data-col="scheduled" { (g.scheduled) }
                dt { "Running" } dd data-col="running" { (g.running) }
                dt { "Retrying" } dd data-col="retrying" { (g.retrying) }
                dt { "Paused" } dd data-col="paused" { (g.paused) }
                dt { "Delivered" } dd data-col="delivered" { (g.delivered) }
                dt { "Dead" } dd data-col="dead" { (g.dead) }
                dt { "Cancelled" } dd data-col="cancelled" { (g.cancelled) }
                dt { "Suppressed" } dd data-col="suppressed" { (g.suppressed) }
                dt { "Rate" } dd data-col="rate" { (rate(g.rate)) }
                dt { "ETA" } dd data-col="eta" { (eta(&g)) }
                @if let Some(t) = g.first_delivered_at { dt { "First delivery" } dd { (layout::timestamp(t)) } }
                @if let Some(t) = g.last_delivered_at { dt { "Last delivery" } dd { (layout::timestamp(t)) " (" (layout::ago(t)) ")" } }
                @if let Some(hook) = &g.hook {
                    dt { "On completion" }
                    dd { code { (hook) } @match g.completed_at {
                        Some(t) => { " enqueued " (layout::ago(t)) },
                        None => { " enqueued once the group finishes" },
                    } }
                }
            }
        }
    };
    let title = format!("Group {name}");
    Ok(respond(
        &ctx,
        Some(Nav::Groups),
        &title,
        &live_only,
        &flash,
        live,
        || {
            html! {
                section {
                    (group_actions(&ctx, &g, &back))
                    p { a #group-messages href=(ctx.url(&format!("/messages?group={}", q(&name)))) { "Its queued messages" } }
                }
            }
        },
    ))
}

/// The pause form of a group.
#[derive(Deserialize)]
pub(crate) struct GroupPauseForm {
    #[serde(default)]
    back: String,
    #[serde(default)]
    reason: String,
}

/// POST `/groups/{name}/pause`.
pub(crate) async fn group_pause<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
    Form(form): Form<GroupPauseForm>,
) -> PageResult {
    let reason = match form.reason.trim() {
        "" => DEFAULT_REASON,
        r => r,
    };
    let outcome = match state.admin.groups().pause(&name, reason).await {
        Ok(()) => Ok(format!("Paused group {name}: {reason}")),
        Err(crate::Error::Config(why)) => Err(why),
        Err(e) => return Err(e.into()),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// POST `/groups/{name}/resume`.
pub(crate) async fn group_resume<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
    Form(form): Form<Back>,
) -> PageResult {
    let was = state.admin.groups().resume(&name).await?;
    Ok(done(
        &ctx,
        &form.back,
        if was {
            Ok(format!("Resumed group {name}."))
        } else {
            Err(format!("Group {name} was not paused."))
        },
    ))
}

/// A form that must be confirmed with the "sure" tick.
#[derive(Deserialize)]
pub(crate) struct Confirmed {
    #[serde(default)]
    back: String,
    #[serde(default)]
    confirm: String,
}

/// POST `/groups/{name}/cancel`, when confirmed.
pub(crate) async fn group_cancel<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
    Form(form): Form<Confirmed>,
) -> PageResult {
    if form.confirm != "yes" {
        return Ok(done(
            &ctx,
            &form.back,
            Err("Tick \"sure\" to cancel.".into()),
        ));
    }
    let n = state.admin.groups().cancel(&name).await?;
    Ok(done(
        &ctx,
        &form.back,
        Ok(format!("Cancelled {} of group {name}.", messages(n))),
    ))
}

/// The filter of the live-message list, as its query and its bulk forms carry it.
#[derive(Deserialize, Default, Clone)]
pub(crate) struct MessageFilter {
    #[serde(rename = "type", default)]
    type_tag: Option<String>,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    key_prefix: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    recipient: Option<String>,
}

impl MessageFilter {
    /// The filter, empty fields left out; an error for an unknown state.
    fn to_filter(&self) -> Result<LiveFilter, String> {
        let given = |v: &Option<String>| v.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        let state = match given(&self.state) {
            None => None,
            Some(s) => Some(LiveState::parse(&s).ok_or_else(|| {
                format!(
                    "There is no state \"{s}\": choose pending, scheduled, running, retrying or paused."
                )
            })?),
        };
        let filter = LiveFilter {
            id: None,
            type_tag: given(&self.type_tag),
            state,
            key_prefix: given(&self.key_prefix),
            error_contains: given(&self.error),
            group: given(&self.group),
            recipient: None,
        };
        Ok(match given(&self.recipient) {
            Some(address) => filter.to(address),
            None => filter,
        })
    }

    /// The query string of the filter (`type=…&group=…&`), empty fields left out.
    fn query(&self) -> String {
        [
            ("type", &self.type_tag),
            ("group", &self.group),
            ("state", &self.state),
            ("key_prefix", &self.key_prefix),
            ("error", &self.error),
            ("recipient", &self.recipient),
        ]
        .iter()
        .filter_map(|(k, v)| {
            v.as_deref()
                .filter(|s| !s.is_empty())
                .map(|v| format!("{k}={}&", q(v)))
        })
        .collect()
    }

    /// The filter as hidden fields, for the bulk forms.
    fn hidden(&self) -> Markup {
        html! {
            input type="hidden" name="type" value=(self.type_tag.as_deref().unwrap_or(""));
            input type="hidden" name="group" value=(self.group.as_deref().unwrap_or(""));
            input type="hidden" name="state" value=(self.state.as_deref().unwrap_or(""));
            input type="hidden" name="key_prefix" value=(self.key_prefix.as_deref().unwrap_or(""));
            input type="hidden" name="error" value=(self.error.as_deref().unwrap_or(""));
            input type="hidden" name="recipient" value=(self.recipient.as_deref().unwrap_or(""));
        }
    }
}

/// `?after=` of the live-message list: the cursor (the last id of the previous page).
#[derive(Deserialize, Default)]
pub(crate) struct Cursor {
    after: Option<String>,
}

/// `in 5m 0s` or `3s ago`.
fn due(t: SystemTime) -> String {
    match t.duration_since(SystemTime::now()) {
        Ok(ahead) if ahead.as_secs() > 0 => format!("in {}", layout::duration(ahead)),
        _ => layout::ago(t),
    }
}

/// The filter form (a GET: the filter lives in the URL).
fn filter_form(ctx: &Ctx, f: &MessageFilter) -> Markup {
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let state = value(&f.state);
    html! {
        form.filters #message-filter method="get" action=(ctx.url("/messages")) {
            input type="text" name="type" placeholder="type" value=(value(&f.type_tag)) aria-label="type";
            input type="text" name="group" placeholder="group" value=(value(&f.group)) aria-label="group";
            select name="state" aria-label="state" {
                option value="" { "any state" }
                @for s in ["pending", "scheduled", "running", "retrying", "paused"] {
                    option value=(s) selected[state == s] { (s) }
                }
            }
            input type="text" name="key_prefix" placeholder="key prefix" value=(value(&f.key_prefix)) aria-label="key prefix";
            input type="text" name="error" placeholder="error contains" value=(value(&f.error)) aria-label="error contains";
            input type="text" name="recipient" placeholder="recipient" value=(value(&f.recipient)) aria-label="recipient";
            button type="submit" { "Filter" }
            a href=(ctx.url("/messages")) { "clear" }
        }
    }
}

/// One row's actions: retry now and cancel.
fn message_actions(ctx: &Ctx, m: &LiveMessage, back: &str) -> Markup {
    let base = format!("/messages/{}", seg(m.id.as_str()));
    html! {
        div.actions {
            @if m.state != LiveState::Running {
                (ctx.form(&format!("{base}/retry"), back, html! {
                    button type="submit" title="Make it due now, keeping its attempts" { "Retry now" }
                }))
                (ctx.form(&format!("{base}/cancel"), back, html! {
                    button.danger type="submit" { "Cancel" }
                }))
            } @else {
                span.muted.small { "running" }
            }
        }
    }
}

/// GET `/messages`: the live messages matching the filter, a page at a time by id (the
/// next page starts after the last id shown, never at an offset).
pub(crate) async fn messages_list<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(filter): Query<MessageFilter>,
    Query(cursor): Query<Cursor>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let live = filter
        .to_filter()
        .map_err(|why| WebError(StatusCode::BAD_REQUEST, why))?;
    let after = cursor
        .after
        .filter(|a| !a.is_empty())
        .map(MessageId::from_string);
    let messages = state.admin.messages();
    let page_ = messages.list(&live, after.as_ref(), PAGE_SIZE).await?;
    let total = messages.count(&live).await?;
    let fq = filter.query();
    let back = match &after {
        Some(a) => format!("/messages?{fq}after={}", q(a.as_str())),
        None => format!("/messages?{fq}"),
    };
    let body = html! {
        section { (filter_form(&ctx, &filter)) }
        section {
            p.muted #messages-total { (total) " queued message" @if total != 1 { "s" } " match" @if total == 1 { "es" } }
            @if page_.messages.is_empty() {
                p.muted { "No queued messages" @if after.is_some() { " after this point" } "." }
            } @else {
                table #messages {
                    thead { tr {
                        th { "Id" } th { "Type" } th { "State" } th { "Group" } th.n { "Attempts" }
                        th { "Due" } th { "Last error" } th {}
                    } }
                    tbody {
                        @for m in &page_.messages {
                            tr data-id=(m.id.as_str()) {
                                td { a href=(ctx.url(&format!("/messages/{}", seg(m.id.as_str())))) { code { (m.id.as_str()) } } }
                                td { (m.type_tag) }
                                td data-col="state" { (m.state.as_str()) }
                                td { @if let Some(g) = &m.group { a href=(ctx.url(&format!("/groups/{}", seg(g)))) { (g) } } @else { span.muted { "–" } } }
                                td.n { (m.attempts) "/" (m.max_attempts) }
                                td.small.nowrap title=(layout::timestamp(m.due_at)) { (due(m.due_at)) }
                                td.err1 title=(m.last_error.as_deref().unwrap_or("")) { (m.last_error.as_deref().map(first_line).unwrap_or("")) }
                                td { (message_actions(&ctx, m, &back)) }
                            }
                        }
                    }
                }
            }
            p #paging {
                @if after.is_some() { a #first-page href=(ctx.url(&format!("/messages?{fq}"))) { "← first page" } " " }
                @if let Some(next) = &page_.next {
                    a #next-page href=(ctx.url(&format!("/messages?{fq}after={}", q(next.as_str())))) { "next page →" }
                }
            }
            @if total > 0 {
                div.actions #bulk {
                    (ctx.form("/messages/retry", &back, html! {
                        (filter.hidden())
                        label.small { input type="checkbox" name="confirm" value="yes" required; " sure" }
                        button type="submit" { "Retry now all " (total) " matching" }
                    }))
                    (ctx.form("/messages/cancel", &back, html! {
                        (filter.hidden())
                        label.small { input type="checkbox" name="confirm" value="yes" required; " sure" }
                        button.danger type="submit" { "Cancel all " (total) " matching" }
                    }))
                }
                p.muted.small { "Running messages are left alone: their workers finish them." }
            }
        }
    };
    Ok(page(
        &ctx,
        Some(Nav::Messages),
        "Messages",
        &flash,
        html! {},
        body,
    )
    .into_response())
}

/// A bulk action's form: the filter and the tick.
#[derive(Deserialize)]
pub(crate) struct BulkForm {
    #[serde(default)]
    back: String,
    #[serde(default)]
    confirm: String,
    #[serde(flatten)]
    filter: MessageFilter,
}

/// The words for the filter in a banner.
fn matching(filter: &LiveFilter) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &filter.type_tag {
        parts.push(format!("of type {t}"));
    }
    if let Some(g) = &filter.group {
        parts.push(format!("in group {g}"));
    }
    if let Some(s) = filter.state {
        parts.push(format!("in state {}", s.as_str()));
    }
    if let Some(k) = &filter.key_prefix {
        parts.push(format!("with a key starting \"{k}\""));
    }
    if let Some(e) = &filter.error_contains {
        parts.push(format!("with \"{e}\" in their last error"));
    }
    if let Some(r) = &filter.recipient {
        parts.push(format!("to {r}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" {}", parts.join(", "))
    }
}

/// Checks the tick and reads the filter of a bulk action.
fn bulk_filter(form: &BulkForm, verb: &str) -> Result<LiveFilter, String> {
    if form.confirm != "yes" {
        return Err(format!("Tick \"sure\" to {verb}."));
    }
    form.filter.to_filter()
}

/// POST `/messages/retry`: makes every matching queued message due now, when confirmed.
pub(crate) async fn messages_bulk_retry<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<BulkForm>,
) -> PageResult {
    let outcome = match bulk_filter(&form, "retry now") {
        Err(why) => Err(why),
        Ok(filter) => {
            let n = state.admin.messages().retry_now_where(&filter).await?;
            Ok(format!(
                "Made {}{} due now.",
                messages(n),
                matching(&filter)
            ))
        }
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// POST `/messages/cancel`: deletes every matching queued message, when confirmed.
pub(crate) async fn messages_bulk_cancel<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<BulkForm>,
) -> PageResult {
    let outcome = match bulk_filter(&form, "cancel") {
        Err(why) => Err(why),
        Ok(filter) => {
            let n = state.admin.messages().cancel_where(&filter).await?;
            Ok(format!("Cancelled {}{}.", messages(n), matching(&filter)))
        }
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// GET `/messages/{id}`: one live message with its payload and attempt log.
pub(crate) async fn message_show<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let Some(d) = state
        .admin
        .messages()
        .show(&MessageId::from_string(id.clone()))
        .await?
    else {
        return gone(&ctx, &state, &id).await;
    };
    let m = &d.message;
    let events = state.admin.messages().events(&m.id).await?;
    let payload = match serde_json::from_slice::<serde_json::Value>(&d.payload) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(&d.payload).into_owned(),
    };
    let back = format!("/messages/{}", seg(m.id.as_str()));
    let body = html! {
        section {
            dl #message {
                dt { "Id" } dd { code { (m.id.as_str()) } }
                dt { "Type" } dd { a href=(ctx.url(&format!("/types/{}", seg(&m.type_tag)))) { (m.type_tag) } }
                dt { "State" } dd data-col="state" { (m.state.as_str()) }
                dt { "Group" } dd { @if let Some(g) = &m.group { a href=(ctx.url(&format!("/groups/{}", seg(g)))) { (g) } } @else { span.muted { "none" } } }
                dt { "Attempts" } dd data-col="attempts" { (m.attempts) " of " (m.max_attempts) }
                dt { "Priority" } dd { (m.priority) }
                dt { "Idempotency key" } dd { @if let Some(k) = &m.idempotency_key { code { (k) } } @else { span.muted { "none" } } }
                dt { "Enqueued" } dd { (layout::timestamp(m.enqueued_at)) " (" (layout::ago(m.enqueued_at)) ")" }
                dt { "Due" } dd data-col="due" { (layout::timestamp(m.due_at)) " (" (due(m.due_at)) ")" }
                dt { "Lease owner" } dd data-col="lease-owner" { @if let Some(o) = &m.lease_owner { code { (o) } } @else { span.muted { "none (not running)" } } }
                @if let Some(t) = m.lease_expires_at { dt { "Lease until" } dd { (layout::timestamp(t)) } }
            }
            (message_actions(&ctx, m, &back))
        }
        @if let Some(e) = &m.last_error {
            section {
                h2 { "Last error" }
                pre #last-error { (e) }
            }
        }
        (layout::attempts(&m.attempt_log, "Error"))
        (layout::events(&events))
        section {
            h2 { "Payload" }
            pre #payload { (payload) }
        }
    };
    let title = format!("Message {}", m.id);
    Ok(page(&ctx, Some(Nav::Messages), &title, &flash, html! {}, body).into_response())
}

/// The page for a message that is not in the queue: a dead letter's link, or a 404.
async fn gone<B: Backend>(
    ctx: &Ctx,
    state: &super::pages::State<B>,
    id: &str,
) -> Result<Response, WebError> {
    let dead = state
        .admin
        .dead_letters()
        .count(&crate::DeadLetterFilter::id(id))
        .await?;
    let events = state
        .admin
        .messages()
        .events(&MessageId::from_string(id))
        .await?;
    let body = html! {
        section {
            @if dead > 0 {
                p { "Message " code { (id) } " is not queued: it is a dead letter. "
                    a href=(ctx.url(&format!("/dead/{}", seg(id)))) { "Show the dead letter" } "." }
            } @else {
                p { "There is no queued message " code { (id) } ": it may have been delivered or cancelled. "
                    a href=(ctx.url("/messages")) { "Back to the messages" } "." }
            }
        }
        (layout::events(&events))
    };
    Ok((
        StatusCode::NOT_FOUND,
        page(
            ctx,
            Some(Nav::Messages),
            "Message not queued",
            &Flash::default(),
            html! {},
            body,
        ),
    )
        .into_response())
}

/// POST `/messages/{id}/retry`: makes one queued message due now.
pub(crate) async fn message_retry<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Form(form): Form<Back>,
) -> PageResult {
    let retried = state
        .admin
        .messages()
        .retry_now(&MessageId::from_string(id.clone()))
        .await?;
    Ok(done(
        &ctx,
        &form.back,
        if retried {
            Ok(format!("Made {id} due now."))
        } else {
            Err(format!(
                "{id} was not waiting for a later time: it is already due, running, or gone."
            ))
        },
    ))
}

/// POST `/messages/{id}/cancel`: deletes one queued message.
pub(crate) async fn message_cancel<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Form(form): Form<Back>,
) -> PageResult {
    let cancelled = state
        .admin
        .messages()
        .cancel(&MessageId::from_string(id.clone()))
        .await?;
    // After a cancel from its own page, the message's page is gone: back to the list.
    let back = if form.back.starts_with("/messages/") {
        "/messages"
    } else {
        form.back.as_str()
    };
    Ok(done(
        &ctx,
        back,
        if cancelled {
            Ok(format!("Cancelled {id}."))
        } else {
            Err(format!("{id} is running (it finishes) or gone."))
        },
    ))
}
