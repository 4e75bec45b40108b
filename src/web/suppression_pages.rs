//! The suppression list's page (`/suppressions`): its entries (filtered by address or
//! reason, a page at a time), a form to add one, a remove button per entry, and the newest
//! messages the list stopped.

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
    backend::Backend, NewSuppression, SuppressionFilter, SuppressionReason, SuppressionScope,
};

/// Entries per page.
const PAGE_SIZE: u32 = 50;
/// Stopped messages shown.
const STOPPED_SHOWN: u32 = 20;

/// The list's query: an address (its entries and its domain's), a reason, a page.
#[derive(Default, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    address: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    page: u64,
}

/// GET `/suppressions`.
pub(crate) async fn suppressions_page<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(query): Query<ListQuery>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let list = state.admin.suppressions();
    let address = Some(query.address.trim()).filter(|a| !a.is_empty());
    let reason = match query.reason.trim() {
        "" => None,
        r => Some(
            r.parse::<SuppressionReason>()
                .map_err(|e| super::pages::WebError(axum::http::StatusCode::BAD_REQUEST, e))?,
        ),
    };
    let filter = SuppressionFilter {
        address: address.map(str::to_owned),
        reason,
    };
    let (total, entries) = match (
        list.count(&filter).await,
        list.list(
            &filter,
            PAGE_SIZE,
            query.page.saturating_mul(u64::from(PAGE_SIZE)),
        )
        .await,
    ) {
        (Ok(total), Ok(entries)) => (total, entries),
        (Err(crate::Error::Config(why)), _) | (_, Err(crate::Error::Config(why))) => {
            return Err(super::pages::WebError(
                axum::http::StatusCode::BAD_REQUEST,
                why,
            ));
        }
        (Err(e), _) | (_, Err(e)) => return Err(e.into()),
    };
    let stopped = list.stopped_messages(STOPPED_SHOWN).await?;
    let here = format!(
        "/suppressions?address={}&reason={}&page={}",
        q(&query.address),
        q(&query.reason),
        query.page
    );
    let body = html! {
        section {
            h2 { "Add" }
            (ctx.form("/suppressions/add", &here, html! {
                input type="text" name="address" placeholder="user@example.com or @example.com" size="30" aria-label="address" required;
                input type="text" name="scope" value="*" size="14" aria-label="scope" title="* (all mail), list:NAME, type:TAG or group:NAME";
                select name="reason" aria-label="reason" {
                    @for r in SuppressionReason::ALL {
                        option value=(r.as_str()) selected[r == SuppressionReason::Manual] { (r.as_str()) }
                    }
                }
                input type="text" name="expires_in_days" placeholder="days (empty: for ever)" size="10" aria-label="expires in days";
                button type="submit" { "Suppress" }
            }))
            p.small.muted { "Scope: " code { "*" } " stops all mail (transactional mail still goes after an unsubscribe); " code { "list:NAME" } ", " code { "type:TAG" } " and " code { "group:NAME" } " stop that mail only. " code { "@example.com" } " stops a whole domain." }
        }
        section {
            form method="get" action=(ctx.url("/suppressions")) class="inline" {
                input type="text" name="address" value=(query.address) placeholder="address or @domain" aria-label="filter by address";
                select name="reason" aria-label="filter by reason" {
                    option value="" { "any reason" }
                    @for r in SuppressionReason::ALL {
                        option value=(r.as_str()) selected[reason == Some(r)] { (r.as_str()) }
                    }
                }
                button type="submit" { "Filter" }
            }
            p.muted #suppression-total { (total) " entries match." }
            @if !entries.is_empty() {
                table #suppressions {
                    thead { tr { th { "Address" } th { "Scope" } th { "Reason" } th { "Source" } th { "Since" } th { "Expires" } th {} } }
                    tbody {
                        @for e in &entries {
                            tr data-address=(e.address) data-scope=(e.scope.key()) {
                                td { (e.address) }
                                td { code { (e.scope.key()) } }
                                td { (e.reason.as_str()) }
                                td.small { (e.source.as_deref().unwrap_or("-")) }
                                td.nowrap { (layout::timestamp(e.created_at)) }
                                td.nowrap { (e.expires_at.map_or("never".into(), layout::timestamp)) }
                                td { (ctx.form("/suppressions/remove", &here, html! {
                                    input type="hidden" name="address" value=(e.address);
                                    input type="hidden" name="scope" value=(e.scope.key());
                                    button type="submit" { "Remove" }
                                })) }
                            }
                        }
                    }
                }
                @if query.page.checked_add(1).and_then(|p| p.checked_mul(u64::from(PAGE_SIZE))).is_some_and(|seen| total > seen) {
                    p { a href=(ctx.url(&format!("/suppressions?address={}&reason={}&page={}", q(&query.address), q(&query.reason), query.page + 1))) { "Next page" } }
                }
            }
        }
        section {
            h2 { "Stopped messages" }
            @if stopped.is_empty() {
                p.muted { "No message was stopped by a suppression (or their rows were pruned)." }
            } @else {
                table #stopped {
                    thead { tr { th { "Message" } th { "Type" } th { "Group" } th { "Stopped" } th { "By" } } }
                    tbody {
                        @for m in &stopped {
                            tr {
                                td { code { (m.id) } }
                                td { (m.type_tag) }
                                td { (m.group.as_deref().unwrap_or("-")) }
                                td.nowrap { (layout::timestamp(m.at)) }
                                td.small { (m.reason) }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(
        &ctx,
        Some(Nav::Suppressions),
        "Suppressions",
        &flash,
        html! {},
        body,
    )
    .into_response())
}

/// The add form.
#[derive(Deserialize)]
pub(crate) struct AddForm {
    #[serde(default)]
    back: String,
    address: String,
    #[serde(default)]
    scope: String,
    reason: String,
    #[serde(default)]
    expires_in_days: String,
}

/// POST `/suppressions/add`.
pub(crate) async fn suppression_add<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<AddForm>,
) -> PageResult {
    let entry = (|| -> Result<NewSuppression, String> {
        let scope = match form.scope.trim() {
            "" => SuppressionScope::All,
            s => s.parse()?,
        };
        let reason = form.reason.parse()?;
        let mut entry = NewSuppression::new(&form.address, scope, reason)?.source("web admin");
        match form.expires_in_days.trim() {
            "" => {}
            days => {
                let days: u32 = days.parse().map_err(|_| {
                    format!("{days:?} is not a number of days; leave it empty for ever")
                })?;
                entry = entry
                    .expires_at(SystemTime::now() + Duration::from_secs(u64::from(days) * 86_400));
            }
        }
        Ok(entry)
    })();
    let outcome = match entry {
        Ok(entry) => {
            state.admin.suppressions().add(entry.clone()).await?;
            Ok(format!(
                "Suppressed {} ({}, {}).",
                entry.address, entry.scope, entry.reason
            ))
        }
        Err(why) => Err(why),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// The remove form.
#[derive(Deserialize)]
pub(crate) struct RemoveForm {
    #[serde(default)]
    back: String,
    address: String,
    scope: String,
}

/// POST `/suppressions/remove`.
pub(crate) async fn suppression_remove<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<RemoveForm>,
) -> PageResult {
    let outcome = match form.scope.parse::<SuppressionScope>() {
        Err(why) => Err(why),
        Ok(scope) => match state
            .admin
            .suppressions()
            .remove(&form.address, &scope)
            .await
        {
            Ok(true) => Ok(format!(
                "Removed the suppression of {} in {scope}.",
                form.address
            )),
            Ok(false) => Err(format!("{} had no suppression in {scope}.", form.address)),
            Err(crate::Error::Config(why)) => Err(why),
            Err(e) => return Err(e.into()),
        },
    };
    Ok(done(&ctx, &form.back, outcome))
}
