//! The pages and the actions: handlers over [`Admin`], rendered with maud (which escapes
//! every interpolated value).

use std::{collections::BTreeMap, sync::Arc, time::SystemTime};

use axum::{
    body::{to_bytes, Body},
    extract::{OriginalUri, Path, Query, Request, State as AxumState},
    http::{header, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
    Extension, Form,
};
use maud::{html, Markup};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::{
    csrf::{self, Csrf},
    headers,
    layout::{self, chart, page, Ctx, Flash, Nav},
    sampler::Sampler,
    signature::signature,
};
use crate::{
    backend::Backend, Admin, DeadLetter, DeadLetterFilter, MessageId, RateLimit, TypeCounts,
};

/// Everything the handlers share.
pub(crate) struct State<B> {
    pub(crate) admin: Admin<B>,
    pub(crate) csrf: Csrf,
    pub(crate) samples: Sampler,
    /// How each kind's payloads, errors and attempts are shown, by type tag.
    pub(crate) views: crate::kind::Views,
    /// Mark the CSRF cookie `Secure` whatever the request's scheme.
    pub(crate) secure_cookies: bool,
}

pub(super) type St<B> = AxumState<Arc<State<B>>>;

/// Dead letters per page of the list.
const PAGE_SIZE: u32 = 25;
/// The most dead letters read to group them by error.
const GROUP_SCAN: u64 = 10_000;
/// The largest form body accepted.
const MAX_FORM: usize = 64 * 1024;

/// A failure shown as a page.
pub(crate) struct WebError(pub(super) StatusCode, pub(super) String);

impl From<crate::Error> for WebError {
    fn from(e: crate::Error) -> Self {
        WebError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the database operation failed: {e}"),
        )
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let body = html! {
            (maud::DOCTYPE)
            html lang="en" { head { meta charset="utf-8"; title { "outbox admin: error" } }
                body style="font-family:system-ui,sans-serif;margin:2em" {
                    h1 { (self.0.as_u16()) " " (self.0.canonical_reason().unwrap_or("")) }
                    p { (self.1) }
                }
            }
        };
        (self.0, body).into_response()
    }
}

pub(super) type PageResult = Result<Response, WebError>;

/// Runs before every handler: starts the sampler, works out the mount path, gives the
/// browser its CSRF cookie, refuses a POST whose token does not match it, and refuses a
/// `back` value (form or query) that is not a path on this site, before any action.
pub(crate) async fn prepare<B: Backend>(
    AxumState(state): St<B>,
    request: Request,
    next: Next,
) -> Response {
    state.samples.start(&state.admin);
    let base = mount_path(&request);
    let cookie = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, value)| *name == csrf::COOKIE && csrf::plausible_nonce(value))
        .map(|(_, value)| value.to_string());
    let (nonce, fresh) = match cookie {
        Some(n) => (n, false),
        None => (state.csrf.new_nonce(), true),
    };
    let secure = state.secure_cookies
        || request.uri().scheme_str() == Some("https")
        || request
            .extensions()
            .get::<OriginalUri>()
            .is_some_and(|OriginalUri(u)| u.scheme_str() == Some("https"));
    let query = request.uri().query().unwrap_or("").as_bytes();
    if let Some(refusal) = refuse_back(query).or_else(|| refuse_nul(query)) {
        return refusal;
    }
    let mut request = request;
    if request.method() == Method::POST {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = to_bytes(body, MAX_FORM).await else {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large\n").into_response();
        };
        let token = form_urlencoded::parse(&bytes)
            .find(|(k, _)| k == csrf::FIELD)
            .map(|(_, v)| v.into_owned());
        let valid = !fresh && token.is_some_and(|t| state.csrf.verify(&nonce, &t));
        if !valid {
            return (
                StatusCode::FORBIDDEN,
                "the form's CSRF token is missing or does not match this browser's cookie: \
                 reload the page and submit the form again\n",
            )
                .into_response();
        }
        if let Some(refusal) = refuse_back(&bytes).or_else(|| refuse_nul(&bytes)) {
            return refusal;
        }
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let token = state.csrf.token(&nonce);
    let path = if base.is_empty() { "/" } else { &base }.to_string();
    request.extensions_mut().insert(Ctx { base, csrf: token });
    let mut response = next.run(request).await;
    if fresh {
        let cookie = format!(
            "{}={nonce}; Path={}; HttpOnly; SameSite=Strict{}",
            csrf::COOKIE,
            utf8_percent_encode(&path, percent_encoding::CONTROLS),
            if secure { "; Secure" } else { "" }
        );
        if let Ok(v) = header::HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    response
}

/// A 400 when a `back` value in `form` (a query or a form body) is not a path on this
/// site; [`done`] redirects there after an action.
fn refuse_back(form: &[u8]) -> Option<Response> {
    let bad = form_urlencoded::parse(form)
        .filter(|(k, _)| k == "back")
        .any(|(_, v)| !back_ok(&v));
    bad.then(|| {
        (
            StatusCode::BAD_REQUEST,
            "the form's `back` value is not a path on this site: it must start with a single \
             `/` (not `//` or `/\\`) and hold no backslash or control character; nothing was \
             changed\n",
        )
            .into_response()
    })
}

/// A 400 naming the field when a value in `form` (a query or a form body) holds a NUL
/// character, which no filter or name can hold (PostgreSQL refuses it in text).
fn refuse_nul(form: &[u8]) -> Option<Response> {
    let (field, _) =
        form_urlencoded::parse(form).find(|(k, v)| k.contains('\0') || v.contains('\0'))?;
    let field: String = field.chars().filter(|c| !c.is_control()).take(40).collect();
    Some(
        (
            StatusCode::BAD_REQUEST,
            format!(
                "the field `{field}` holds a NUL character (%00), which no filter, name or \
                 address can hold: remove it; nothing was changed\n"
            ),
        )
            .into_response(),
    )
}

/// True for an empty `back` (the overview) or a path on this site: one leading `/`, no
/// backslash (browsers read it as `/`), no control character (browsers drop tabs and
/// line breaks from URLs, so `/\t/evil.example` would become `//evil.example`).
fn back_ok(back: &str) -> bool {
    back.is_empty()
        || (back.starts_with('/')
            && !back.starts_with("//")
            && !back.chars().any(|c| c == '\\' || c.is_ascii_control()))
}

/// The path the router is mounted at: the original path less the part the router sees.
fn mount_path(request: &Request) -> String {
    let inner = request.uri().path();
    let Some(OriginalUri(original)) = request.extensions().get::<OriginalUri>() else {
        return String::new();
    };
    let original = original.path();
    let base = if inner == "/" {
        original.trim_end_matches('/')
    } else {
        original.strip_suffix(inner).unwrap_or("")
    };
    base.to_string()
}

/// A path segment, percent-encoded.
pub(super) fn seg(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

/// A query value, form-encoded.
pub(super) fn q(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `?live=1`: only the live part of the page.
#[derive(Deserialize, Default)]
pub(crate) struct Live {
    live: Option<String>,
}

/// Renders the whole page, or only its live part for the refresh script.
pub(super) fn respond(
    ctx: &Ctx,
    nav: Option<Nav>,
    title: &str,
    live_only: &Live,
    flash: &Flash,
    live: Markup,
    rest: impl FnOnce() -> Markup,
) -> Response {
    if live_only.live.is_some() {
        return live.into_response();
    }
    page(ctx, nav, title, flash, live, rest()).into_response()
}

/// The type counts, with paused types that have no messages added.
fn rows(
    counts: Vec<TypeCounts>,
    paused: &BTreeMap<String, (SystemTime, String)>,
) -> Vec<TypeCounts> {
    let mut rows = counts;
    for t in paused.keys() {
        if !rows.iter().any(|c| &c.type_tag == t) {
            rows.push(TypeCounts {
                type_tag: t.clone(),
                ..TypeCounts::default()
            });
        }
    }
    rows.sort_by(|a, b| a.type_tag.cmp(&b.type_tag));
    rows
}

async fn paused_map<B: Backend>(
    admin: &Admin<B>,
) -> Result<BTreeMap<String, (SystemTime, String)>, WebError> {
    Ok(admin
        .paused()
        .await?
        .into_iter()
        .map(|p| (p.type_tag, (p.paused_at, p.reason)))
        .collect())
}

fn counts_table(
    ctx: &Ctx,
    rows: &[TypeCounts],
    paused: &BTreeMap<String, (SystemTime, String)>,
) -> Markup {
    let now = SystemTime::now();
    html! {
        @if rows.is_empty() {
            p.muted { "No messages, dead letters or paused types yet." }
        } @else {
            table #counts {
                thead { tr {
                    th { "Type" } th.n { "Pending" } th.n { "Scheduled" } th.n { "Running" }
                    th.n { "Retrying" } th.n title="Queued, held by a paused type or group" { "Paused" } th.n { "Dead" } th.n title="Not sent: a suppression stops the recipient" { "Suppressed" } th.n { "Oldest due" } th { "State" }
                } }
                tbody {
                    @for c in rows {
                        tr data-type=(c.type_tag) {
                            td { a href=(ctx.url(&format!("/types/{}", seg(&c.type_tag)))) { (c.type_tag) } }
                            td.n data-col="pending" { (c.pending) }
                            td.n data-col="scheduled" { (c.scheduled) }
                            td.n data-col="running" { (c.running) }
                            td.n data-col="retrying" { (c.retrying) }
                            td.n data-col="paused" { (c.paused) }
                            td.n data-col="dead" {
                                @if c.dead > 0 {
                                    a.dead href=(ctx.url(&format!("/dead?type={}", q(&c.type_tag)))) { (c.dead) }
                                } @else { "0" }
                            }
                            td.n data-col="suppressed" {
                                @if c.suppressed > 0 {
                                    a href=(ctx.url("/suppressions")) { (c.suppressed) }
                                } @else { "0" }
                            }
                            td.n data-col="oldest-due" {
                                @match c.oldest_due {
                                    Some(t) => (layout::duration(now.duration_since(t).unwrap_or_default())),
                                    None => span.muted { "–" },
                                }
                            }
                            td data-col="state" {
                                @if let Some((_, reason)) = paused.get(&c.type_tag) {
                                    span.badge.paused title=(reason) { "paused" }
                                    " " span.small.muted { (reason) }
                                } @else {
                                    span.muted.small { "running" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The circuit breakers: each one that ever opened, the open ones first in red with why,
/// their failed probes and when the next may start.
fn breakers_table(breakers: &[crate::BreakerState]) -> Markup {
    html! {
        section #breakers {
            h2 { "Circuit breakers" }
            table {
                thead { tr { th { "Breaker" } th { "State" } th.n { "Failed probes" } th { "Next probe" } th { "Reason" } } }
                tbody {
                    @for b in breakers {
                        tr data-breaker=(b.name) {
                            td { (b.name) }
                            @if let Some(at) = b.opened_at {
                                td data-col="state" { span.badge.open { "open" } " " (layout::ago(at)) }
                            } @else {
                                td data-col="state" { "closed" @if let Some(at) = b.closed_at { " " (layout::ago(at)) } }
                            }
                            td.n { (b.probes_failed) }
                            td {
                                @if !b.is_open() { "-" }
                                @else if b.probing { "probing now" }
                                @else { @match b.next_probe_in {
                                    Some(d) if !d.is_zero() => { "in " (layout::duration(d)) }
                                    _ => { "due" }
                                } }
                            }
                            td { @if b.is_open() { code.reply { (b.reason.as_deref().unwrap_or("")) } } @else { "-" } }
                        }
                    }
                }
            }
        }
    }
}

/// GET `/`: the overview.
pub(crate) async fn overview<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(live_only): Query<Live>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let admin = &state.admin;
    let paused = paused_map(admin).await?;
    let counts = admin.status_counts().await?;
    let unattended = admin.unattended(&counts).await?;
    let rows = rows(counts, &paused);
    let buckets = admin.rate_limits().await?;
    let breakers = admin.breakers().await?;
    let live = html! {
        @if let Some(u) = unattended {
            p #unattended .flash.err role="alert" { "No workers: " (u) }
        }
        @if breakers.iter().any(|b| b.is_open()) {
            (breakers_table(&breakers))
        }
        section {
            h2 { "Types" }
            (counts_table(&ctx, &rows, &paused))
        }
        section {
            h2 { "Deliveries, last hour" }
            (chart(&state.samples.series(None), "all types"))
        }
        @if !breakers.is_empty() && !breakers.iter().any(|b| b.is_open()) {
            (breakers_table(&breakers))
        }
        section {
            h2 { "Rate buckets" }
            @if buckets.is_empty() {
                p.muted { "No rate buckets." }
            } @else {
                table #buckets {
                    thead { tr { th { "Bucket" } th.n { "Tokens" } th.n { "Capacity" } th.n { "Rate" } } }
                    tbody {
                        @for (name, b) in &buckets {
                            tr data-bucket=(name) {
                                td { (name) }
                                td.n data-col="tokens" { (layout::trim(b.tokens_now())) }
                                td.n data-col="capacity" { (layout::trim(b.limit.burst)) }
                                td.n data-col="rate" { (crate::units::rate(b.limit.per_second)) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(
        &ctx,
        Some(Nav::Overview),
        "Overview",
        &live_only,
        &flash,
        live,
        || {
            html! {
                section {
                    h2 { "Pause a type" }
                    p.muted.small { "Workers in every process stop starting its messages within about a second; they stay queued." }
                    (ctx.form("/pause", "/", html! {
                        select name="type_tag" required {
                            @for c in &rows { option value=(c.type_tag) { (c.type_tag) } }
                        }
                        input type="text" name="reason" placeholder="reason" required size="40";
                        button type="submit" { "Pause" }
                    }))
                    @if !paused.is_empty() {
                        h2 { "Paused" }
                        table #paused {
                            @for (t, (at, reason)) in &paused {
                                tr {
                                    td { a href=(ctx.url(&format!("/types/{}", seg(t)))) { (t) } }
                                    td { (reason) }
                                    td.muted { (layout::ago(*at)) }
                                    td { (ctx.form(&format!("/types/{}/resume", seg(t)), "/", html! {
                                        button type="submit" { "Resume" }
                                    })) }
                                }
                            }
                        }
                    }
                }
                @if !buckets.is_empty() {
                    section {
                        h2 { "Change a rate" }
                        p.muted.small { "Workers use the new rate from their next token; saved tokens are kept, capped at the new capacity." }
                        table #rates {
                            @for (name, b) in &buckets {
                                tr {
                                    td { (name) }
                                    td { (ctx.form(&format!("/buckets/{}", seg(name)), "/", html! {
                                        input type="number" name="per_hour" min="0.001" step="any" required
                                            value=(layout::trim(b.limit.per_second * 3600.0)) aria-label="messages per hour";
                                        " per hour, capacity "
                                        input type="number" name="burst" min="1" step="1" required
                                            value=(b.limit.burst.round() as u64) aria-label="capacity";
                                        button type="submit" { "Set rate" }
                                    })) }
                                }
                            }
                        }
                    }
                }
            }
        },
    ))
}

/// GET `/types/{type}`: one type.
pub(crate) async fn type_page<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(type_tag): Path<String>,
    Query(live_only): Query<Live>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let admin = &state.admin;
    let paused = paused_map(admin).await?;
    let counts = admin
        .status_counts()
        .await?
        .into_iter()
        .find(|c| c.type_tag == type_tag)
        .unwrap_or_else(|| TypeCounts {
            type_tag: type_tag.clone(),
            ..TypeCounts::default()
        });
    let filter = DeadLetterFilter::type_tag(&type_tag);
    let dead = admin.dead_letters().list(&filter, 0, 10).await?;
    let held = admin.messages().held_keys(&type_tag).await?;
    let back = format!("/types/{}", seg(&type_tag));
    let live = html! {
        section {
            (counts_table(&ctx, std::slice::from_ref(&counts), &paused))
        }
        @if !held.is_empty() {
            section {
                h2 { "Held order keys" }
                p.muted { "Each key's later messages wait behind this message: a dead one until it is requeued or purged, a retrying one until its retry succeeds or it is cancelled." }
                (held_table(&ctx, &held))
            }
        }
        section {
            h2 { "Deliveries, last hour" }
            (chart(&state.samples.series(Some(&type_tag)), &type_tag))
        }
    };
    let title = format!("Type {type_tag}");
    Ok(respond(
        &ctx,
        None,
        &title,
        &live_only,
        &flash,
        live,
        || {
            html! {
                section {
                    @if let Some((at, reason)) = paused.get(&type_tag) {
                        p { span.badge.paused { "paused" } " " (layout::ago(*at)) ": " (reason) }
                        (ctx.form(&format!("/types/{}/resume", seg(&type_tag)), &back, html! {
                            button type="submit" { "Resume" }
                        }))
                    } @else {
                        (ctx.form("/pause", &back, html! {
                            input type="hidden" name="type_tag" value=(type_tag);
                            input type="text" name="reason" placeholder="reason" required size="40";
                            button type="submit" { "Pause" }
                        }))
                    }
                }
                section {
                    h2 { "Newest dead letters" }
                    (dead_table(&ctx, &dead, &back))
                    @if counts.dead > 0 {
                        p { a href=(ctx.url(&format!("/dead?type={}", q(&type_tag)))) { "All " (counts.dead) " dead letters of this type" }
                            " · " a href=(ctx.url(&format!("/dead/groups?type={}", q(&type_tag)))) { "grouped by error" } }
                        (bulk_forms(&ctx, Some(&type_tag), counts.dead, &back))
                    }
                }
            }
        },
    ))
}

/// The order keys a dead or failing message holds, with a link to that message.
pub(super) fn held_table(ctx: &Ctx, held: &[crate::HeldKey]) -> Markup {
    html! {
        table #held {
            thead { tr { th { "Key" } th { "Held by" } th { "Message" } th.n { "Waiting" } th { "Last error" } } }
            tbody {
                @for h in held {
                    @let page = match h.held_by {
                        crate::HeldBy::Dead => format!("/dead/{}", seg(&h.message_id)),
                        crate::HeldBy::Retrying => format!("/messages/{}", seg(&h.message_id)),
                    };
                    tr data-key=(h.key) {
                        td { code { (h.key) } }
                        td { span.badge { (h.held_by.as_str()) } }
                        td { a href=(ctx.url(&page)) { code { (h.message_id) } } }
                        td.n { (h.waiting) }
                        td.err1 title=(h.last_error) { (first_line(&h.last_error)) }
                    }
                }
            }
        }
    }
}

/// The dead-letter rows with their actions.
fn dead_table(ctx: &Ctx, list: &[DeadLetter], back: &str) -> Markup {
    html! {
        @if list.is_empty() {
            p.muted { "No dead letters." }
        } @else {
            table #dead {
                thead { tr { th { "Id" } th { "Type" } th.n { "Attempts" } th { "Failed" } th { "Last error" } th {} } }
                tbody {
                    @for d in list {
                        tr data-id=(d.id.as_str()) {
                            td { a href=(ctx.url(&format!("/dead/{}", seg(d.id.as_str())))) { code { (d.id.as_str()) } } }
                            td { (d.type_tag) }
                            td.n { (d.attempts) "/" (d.max_attempts) }
                            td.small { (layout::ago(d.failed_at)) }
                            td.err1 title=(d.last_error) { (first_line(&d.last_error)) }
                            td { div.actions {
                                (ctx.form(&format!("/dead/{}/requeue", seg(d.id.as_str())), back, html! {
                                    button type="submit" { "Requeue" }
                                }))
                                (ctx.form(&format!("/dead/{}/purge", seg(d.id.as_str())), back, html! {
                                    button.danger type="submit" { "Purge" }
                                }))
                            } }
                        }
                    }
                }
            }
        }
    }
}

/// Requeue / purge every dead letter (of a type); purging asks for a tick.
fn bulk_forms(ctx: &Ctx, type_tag: Option<&str>, n: u64, back: &str) -> Markup {
    let what = match type_tag {
        Some(t) => format!("all {n} of {t}"),
        None => format!("all {n}"),
    };
    html! {
        div.actions #bulk {
            (ctx.form("/dead/requeue", back, html! {
                input type="hidden" name="type_tag" value=(type_tag.unwrap_or(""));
                button type="submit" { "Requeue " (what) }
            }))
            (ctx.form("/dead/purge", back, html! {
                input type="hidden" name="type_tag" value=(type_tag.unwrap_or(""));
                label.small { input type="checkbox" name="confirm" value="yes" required; " sure" }
                button.danger type="submit" { "Purge " (what) }
            }))
        }
    }
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// `?type=&page=` of the dead-letter list.
#[derive(Deserialize, Default)]
pub(crate) struct DeadQuery {
    #[serde(rename = "type")]
    type_tag: Option<String>,
    page: Option<u64>,
}

/// Every type with dead letters, for the filter.
async fn dead_types<B: Backend>(admin: &Admin<B>) -> Result<Vec<(String, u64)>, WebError> {
    Ok(admin
        .status_counts()
        .await?
        .into_iter()
        .filter(|c| c.dead > 0)
        .map(|c| (c.type_tag, c.dead))
        .collect())
}

fn type_filter(ctx: &Ctx, action: &str, types: &[(String, u64)], selected: Option<&str>) -> Markup {
    html! {
        form method="get" action=(ctx.url(action)) class="inline" {
            label for="type-filter" { "Type " }
            select #type-filter name="type" {
                option value="" { "all types" }
                @for (t, n) in types {
                    option value=(t) selected[selected == Some(t.as_str())] { (t) " (" (n) ")" }
                }
            }
            button type="submit" { "Show" }
        }
    }
}

/// GET `/dead`: the dead letters, newest first, paged.
pub(crate) async fn dead_list<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(query): Query<DeadQuery>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let admin = &state.admin;
    let type_tag = query.type_tag.filter(|t| !t.is_empty());
    let filter = match &type_tag {
        Some(t) => DeadLetterFilter::type_tag(t),
        None => DeadLetterFilter::all(),
    };
    let dead = admin.dead_letters();
    let total = dead.count(&filter).await?;
    let pages = total.div_ceil(u64::from(PAGE_SIZE)).max(1);
    let page_no = query.page.unwrap_or(0).min(pages - 1);
    let list = dead.list(&filter, page_no, PAGE_SIZE).await?;
    let types = dead_types(admin).await?;
    let type_q = type_tag
        .as_deref()
        .map(|t| format!("type={}&", q(t)))
        .unwrap_or_default();
    let back = format!("/dead?{type_q}page={page_no}");
    let body = html! {
        section {
            (type_filter(&ctx, "/dead", &types, type_tag.as_deref()))
            " " a href=(ctx.url(&format!("/dead/groups?{type_q}"))) { "group by error" }
        }
        section {
            p.muted #dead-total { (total) " dead letter" @if total != 1 { "s" }
                @if let Some(t) = &type_tag { " of " (t) } }
            (dead_table(&ctx, &list, &back))
            @if pages > 1 {
                p {
                    @if page_no > 0 { a href=(ctx.url(&format!("/dead?{type_q}page={}", page_no - 1))) { "← newer" } " " }
                    "page " (page_no + 1) " of " (pages)
                    @if page_no + 1 < pages { " " a href=(ctx.url(&format!("/dead?{type_q}page={}", page_no + 1))) { "older →" } }
                }
            }
            @if total > 0 { (bulk_forms(&ctx, type_tag.as_deref(), total, &back)) }
        }
    };
    Ok(page(
        &ctx,
        Some(Nav::Dead),
        "Dead letters",
        &flash,
        html! {},
        body,
    )
    .into_response())
}

/// One group of dead letters with the same error signature.
struct Group {
    type_tag: String,
    signature: String,
    count: u64,
    newest: SystemTime,
    example: MessageId,
    example_error: String,
}

/// Reads up to [`GROUP_SCAN`] dead letters (of a type) and calls `each` with their
/// signatures; says whether it read them all.
async fn scan_dead<B: Backend>(
    state: &State<B>,
    type_tag: Option<&str>,
    mut each: impl FnMut(&DeadLetter, String),
) -> Result<bool, WebError> {
    let filter = match type_tag {
        Some(t) => DeadLetterFilter::type_tag(t),
        None => DeadLetterFilter::all(),
    };
    let dead = state.admin.dead_letters();
    let size = 500u32;
    let mut read = 0u64;
    for page_no in 0.. {
        let list = dead.list(&filter, page_no, size).await?;
        for d in &list {
            each(
                d,
                signature(&state.views, &d.type_tag, &d.payload, &d.last_error),
            );
        }
        read += list.len() as u64;
        if list.len() < size as usize {
            return Ok(true);
        }
        if read >= GROUP_SCAN {
            return Ok(false);
        }
    }
    Ok(true)
}

/// GET `/dead/groups`: dead letters grouped by error signature.
pub(crate) async fn dead_groups<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(query): Query<DeadQuery>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let admin = &state.admin;
    let type_tag = query.type_tag.filter(|t| !t.is_empty());
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    let complete = scan_dead(&state, type_tag.as_deref(), |d, sig| {
        let g = groups
            .entry((d.type_tag.clone(), sig.clone()))
            .or_insert_with(|| Group {
                type_tag: d.type_tag.clone(),
                signature: sig,
                count: 0,
                newest: d.failed_at,
                example: d.id.clone(),
                example_error: d.last_error.clone(),
            });
        g.count += 1;
    })
    .await?;
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then(a.signature.cmp(&b.signature)));
    let types = dead_types(admin).await?;
    let type_q = type_tag
        .as_deref()
        .map(|t| format!("type={}", q(t)))
        .unwrap_or_default();
    let back = format!("/dead/groups?{type_q}");
    let body = html! {
        section { (type_filter(&ctx, "/dead/groups", &types, type_tag.as_deref())) }
        section {
            @if !complete { p.flash.err { "Only the newest " (GROUP_SCAN) " dead letters are grouped." } }
            @if groups.is_empty() {
                p.muted { "No dead letters." }
            } @else {
                table #groups {
                    thead { tr { th { "Error" } th { "Type" } th.n { "Count" } th { "Newest" } th {} } }
                    tbody {
                        @for g in &groups {
                            tr data-signature=(g.signature) {
                                td {
                                    strong { (g.signature) }
                                    div.small.muted.err1 title=(g.example_error) {
                                        "e.g. " a href=(ctx.url(&format!("/dead/{}", seg(g.example.as_str())))) { (first_line(&g.example_error)) }
                                    }
                                }
                                td { (g.type_tag) }
                                td.n { (g.count) }
                                td.small { (layout::ago(g.newest)) }
                                td { div.actions {
                                    (ctx.form("/dead/groups/requeue", &back, html! {
                                        input type="hidden" name="type_tag" value=(g.type_tag);
                                        input type="hidden" name="signature" value=(g.signature);
                                        button type="submit" { "Requeue " (g.count) }
                                    }))
                                    (ctx.form("/dead/groups/purge", &back, html! {
                                        input type="hidden" name="type_tag" value=(g.type_tag);
                                        input type="hidden" name="signature" value=(g.signature);
                                        label.small { input type="checkbox" name="confirm" value="yes" required; " sure" }
                                        button.danger type="submit" { "Purge " (g.count) }
                                    }))
                                } }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(
        &ctx,
        Some(Nav::DeadGroups),
        "Dead letters by error",
        &flash,
        html! {},
        body,
    )
    .into_response())
}

/// `?remote_images=1` on a dead letter's page: show an email's remote images.
#[derive(Deserialize, Default)]
pub(crate) struct ShowQuery {
    remote_images: Option<String>,
}

/// GET `/dead/{id}`: one dead letter. An email's remote images stay blocked by the
/// page's policy unless the operator asked for them (`?remote_images=1`).
pub(crate) async fn dead_show<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Query(show): Query<ShowQuery>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let remote_images = show.remote_images.is_some_and(|v| v == "1");
    let found = state
        .admin
        .dead_letters()
        .list(&DeadLetterFilter::id(&id), 0, 1)
        .await?;
    let Some(d) = found.into_iter().next() else {
        return Err(WebError(
            StatusCode::NOT_FOUND,
            format!("There is no dead letter with id {id}: it may have been requeued or purged."),
        ));
    };
    let payload = match serde_json::from_slice::<serde_json::Value>(&d.payload) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(&d.payload).into_owned(),
    };
    let view = state.views.get(&d.type_tag);
    let shown = view.and_then(|v| v.show(&d.id, &d.payload)).map(|shown| {
        let page = ctx.url(&format!("/dead/{}", seg(d.id.as_str())));
        super::view::section(&shown, remote_images, &page)
    });
    let attempts_label = view.map_or("Error", |v| v.attempts_label());
    let events = state.admin.messages().events(&d.id).await?;
    let back = format!("/dead?type={}", q(&d.type_tag));
    let body = html! {
        section {
            dl {
                dt { "Id" } dd { code { (d.id.as_str()) } }
                dt { "Type" } dd { a href=(ctx.url(&format!("/types/{}", seg(&d.type_tag)))) { (d.type_tag) } }
                dt { "Attempts" } dd { (d.attempts) " of " (d.max_attempts) }
                dt { "Idempotency key" } dd { @if let Some(k) = &d.idempotency_key { code { (k) } } @else { span.muted { "none" } } }
                @if let Some(t) = d.enqueued_at {
                    dt { "Enqueued" } dd { (layout::timestamp(t)) " (" (layout::ago(t)) ")" }
                }
                dt { "Given up" } dd { (layout::timestamp(d.failed_at)) " (" (layout::ago(d.failed_at)) ")" }
                dt { "Error signature" } dd { (signature(&state.views, &d.type_tag, &d.payload, &d.last_error)) }
            }
            div.actions {
                (ctx.form(&format!("/dead/{}/requeue", seg(d.id.as_str())), &back, html! {
                    button type="submit" { "Requeue" }
                }))
                (ctx.form(&format!("/dead/{}/purge", seg(d.id.as_str())), &back, html! {
                    button.danger type="submit" { "Purge" }
                }))
            }
        }
        section {
            h2 { "Last error" }
            pre #last-error { (d.last_error) }
        }
        (layout::attempts(&d.attempt_log, attempts_label))
        (layout::events(&events))
        @if let Some(shown) = shown { (shown) }
        section {
            h2 { "Payload" }
            pre #payload { (payload) }
        }
    };
    let title = format!("Dead letter {}", d.id);
    let mut response = page(&ctx, Some(Nav::Dead), &title, &flash, html! {}, body).into_response();
    if remote_images {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, headers::policy(true));
    }
    Ok(response)
}

/// The fields every action form carries (the CSRF token is checked before).
#[derive(Deserialize)]
pub(crate) struct Back {
    #[serde(default)]
    pub(super) back: String,
}

/// Back to the page the form was on, with the outcome to show (signed for this browser:
/// the page shows no banner text that this admin did not write).
pub(super) fn done(ctx: &Ctx, back: &str, outcome: Result<String, String>) -> Response {
    // Only a path under the mount point: never another site ([`prepare`] refused others).
    let back = if back_ok(back) && !back.is_empty() {
        back
    } else {
        "/"
    };
    let target = if back == "/" {
        ctx.home()
    } else {
        ctx.url(back)
    };
    let sep = if target.contains('?') { '&' } else { '?' };
    let (key, text) = match outcome {
        Ok(m) => ("msg", m),
        Err(e) => ("err", e),
    };
    let sig = csrf::flash_sig(&ctx.csrf, key, &text);
    Redirect::to(&format!("{target}{sep}{key}={}&sig={sig}", q(&text))).into_response()
}

/// POST `/dead/{id}/requeue`.
pub(crate) async fn dead_requeue<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Form(form): Form<Back>,
) -> PageResult {
    let r = state
        .admin
        .dead_letters()
        .requeue_where(&DeadLetterFilter::id(&id))
        .await?;
    Ok(done(
        &ctx,
        &form.back,
        match (r.requeued, r.key_taken) {
            (1, _) => Ok(format!("Requeued {id}.")),
            (_, 1) => Err(format!(
                "{id} stays a dead letter: a newer message holds its idempotency key."
            )),
            _ => Err(format!(
                "There is no dead letter {id} (requeued or purged already?)."
            )),
        },
    ))
}

/// POST `/dead/{id}/purge`.
pub(crate) async fn dead_purge<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Form(form): Form<Back>,
) -> PageResult {
    let purged = state
        .admin
        .dead_letters()
        .purge(&MessageId::from_string(id.clone()))
        .await?;
    Ok(done(
        &ctx,
        &form.back,
        if purged {
            Ok(format!("Purged {id}."))
        } else {
            Err(format!(
                "There is no dead letter {id} (requeued or purged already?)."
            ))
        },
    ))
}

/// A bulk action's form: a type (empty for all), a signature for a group, the tick.
#[derive(Deserialize)]
pub(crate) struct Bulk {
    #[serde(default)]
    back: String,
    #[serde(default)]
    type_tag: String,
    #[serde(default)]
    signature: String,
    #[serde(default)]
    confirm: String,
}

impl Bulk {
    fn filter(&self) -> DeadLetterFilter {
        if self.type_tag.is_empty() {
            DeadLetterFilter::all()
        } else {
            DeadLetterFilter::type_tag(&self.type_tag)
        }
    }

    fn what(&self) -> String {
        if self.type_tag.is_empty() {
            "dead letters".into()
        } else {
            format!("dead letters of {}", self.type_tag)
        }
    }
}

fn requeued_text(n: u64, key_taken: u64, what: &str) -> String {
    let mut s = format!("Requeued {n} {what}.");
    if key_taken > 0 {
        s.push_str(&format!(
            " {key_taken} stay dead letters: newer messages hold their idempotency keys."
        ));
    }
    s
}

/// POST `/dead/requeue`: every dead letter (of a type).
pub(crate) async fn dead_bulk_requeue<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<Bulk>,
) -> PageResult {
    let r = state
        .admin
        .dead_letters()
        .requeue_where(&form.filter())
        .await?;
    Ok(done(
        &ctx,
        &form.back,
        Ok(requeued_text(r.requeued, r.key_taken, &form.what())),
    ))
}

/// POST `/dead/purge`: every dead letter (of a type), when confirmed.
pub(crate) async fn dead_bulk_purge<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<Bulk>,
) -> PageResult {
    if form.confirm != "yes" {
        return Ok(done(
            &ctx,
            &form.back,
            Err("Tick \"sure\" to purge.".into()),
        ));
    }
    let n = state
        .admin
        .dead_letters()
        .purge_where(&form.filter())
        .await?;
    Ok(done(
        &ctx,
        &form.back,
        Ok(format!("Purged {n} {}.", form.what())),
    ))
}

/// The ids of the dead letters of one type with one signature.
async fn group_ids<B: Backend>(state: &State<B>, form: &Bulk) -> Result<Vec<MessageId>, WebError> {
    let mut ids = Vec::new();
    scan_dead(state, Some(&form.type_tag), |d, sig| {
        if sig == form.signature {
            ids.push(d.id.clone());
        }
    })
    .await?;
    Ok(ids)
}

/// POST `/dead/groups/requeue`: the dead letters of one type with one error signature.
pub(crate) async fn group_requeue<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<Bulk>,
) -> PageResult {
    let dead = state.admin.dead_letters();
    let (mut n, mut taken) = (0, 0);
    for id in group_ids(&state, &form).await? {
        let r = dead
            .requeue_where(&DeadLetterFilter::id(id.as_str()))
            .await?;
        n += r.requeued;
        taken += r.key_taken;
    }
    let what = format!("\"{}\" {}", form.signature, form.what());
    Ok(done(&ctx, &form.back, Ok(requeued_text(n, taken, &what))))
}

/// POST `/dead/groups/purge`: the dead letters of one type with one error signature.
pub(crate) async fn group_purge<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<Bulk>,
) -> PageResult {
    if form.confirm != "yes" {
        return Ok(done(
            &ctx,
            &form.back,
            Err("Tick \"sure\" to purge.".into()),
        ));
    }
    let dead = state.admin.dead_letters();
    let mut n = 0;
    for id in group_ids(&state, &form).await? {
        n += u64::from(dead.purge(&id).await?);
    }
    Ok(done(
        &ctx,
        &form.back,
        Ok(format!(
            "Purged {n} \"{}\" {}.",
            form.signature,
            form.what()
        )),
    ))
}

/// The pause form.
#[derive(Deserialize)]
pub(crate) struct PauseForm {
    #[serde(default)]
    back: String,
    type_tag: String,
    #[serde(default)]
    reason: String,
}

/// POST `/pause`: pauses the type named in the form.
pub(crate) async fn pause<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<PauseForm>,
) -> PageResult {
    let reason = form.reason.trim();
    if form.type_tag.is_empty() || reason.is_empty() {
        return Ok(done(
            &ctx,
            &form.back,
            Err("Give a type and a reason to pause.".into()),
        ));
    }
    state.admin.pause(&form.type_tag, reason).await?;
    Ok(done(
        &ctx,
        &form.back,
        Ok(format!("Paused {}: {reason}", form.type_tag)),
    ))
}

/// POST `/types/{type}/resume`.
pub(crate) async fn resume<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(type_tag): Path<String>,
    Form(form): Form<Back>,
) -> PageResult {
    let was = state.admin.resume(&type_tag).await?;
    Ok(done(
        &ctx,
        &form.back,
        if was {
            Ok(format!("Resumed {type_tag}."))
        } else {
            Err(format!("{type_tag} was not paused."))
        },
    ))
}

/// The rate form.
#[derive(Deserialize)]
pub(crate) struct RateForm {
    #[serde(default)]
    back: String,
    per_hour: String,
    burst: String,
}

/// POST `/buckets/{name}`: a bucket's new rate.
pub(crate) async fn set_rate<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
    Form(form): Form<RateForm>,
) -> PageResult {
    let per_hour: Result<f64, _> = form.per_hour.trim().parse();
    let burst: Result<u32, _> = form.burst.trim().parse();
    let (Ok(per_hour), Ok(burst)) = (per_hour, burst) else {
        return Ok(done(
            &ctx,
            &form.back,
            Err(
                "The rate must be a number of messages per hour and the capacity a whole number."
                    .into(),
            ),
        ));
    };
    let limit = RateLimit::per_hour(per_hour).burst(burst);
    Ok(done(
        &ctx,
        &form.back,
        match state.admin.set_rate_limit(&name, limit).await {
            Ok(()) => Ok(format!(
                "Bucket {name}: {} per hour, capacity {burst}.",
                layout::trim(per_hour)
            )),
            Err(crate::Error::Config(why)) => Err(why),
            Err(e) => return Err(e.into()),
        },
    ))
}

/// Any other path.
pub(crate) async fn not_found(Extension(ctx): Extension<Ctx>) -> Response {
    let body = html! {
        section { p { "There is no such page. " a href=(ctx.home()) { "Back to the overview" } "." } }
    };
    (
        StatusCode::NOT_FOUND,
        page(&ctx, None, "Not found", &Flash::default(), html! {}, body),
    )
        .into_response()
}
