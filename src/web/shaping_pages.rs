//! Traffic shaping's page (`/shaping`): every shaped site with its limits, messages in
//! flight and the slowdown or suspension a rule put on it (with a button that ends it), and
//! the stored reply rules with a button that removes one.

use std::time::SystemTime;

use axum::{
    extract::{Query, State as AxumState},
    response::IntoResponse,
    Extension, Form,
};
use maud::html;
use serde::Deserialize;

use super::{
    layout::{self, page, Ctx, Flash, Nav},
    pages::{done, PageResult, St},
};
use crate::{backend::Backend, describe_duration, describe_rate, SiteState};

/// GET `/shaping`.
pub(crate) async fn shaping_page<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let shaping = state.admin.shaping();
    let sites = shaping.sites().await?;
    let rules = shaping.rules().await?;
    let now = SystemTime::now();
    let here = "/shaping";
    let body = html! {
        section {
            h2 { "Sites" }
            @if sites.is_empty() {
                p.muted #no-sites { "No site is shaped: no limits are configured and no rule has acted. Messages to every destination go at full speed." }
            } @else {
                table #sites {
                    thead { tr { th { "Site" } th { "Limits" } th.num { "In flight" } th { "State" } th { "Reason" } th {} } }
                    tbody {
                        @for s in &sites {
                            @let held = s.slowed_at(now) || s.suspended_at(now);
                            tr data-site=(s.site) data-held=(held) {
                                td { code { (s.site) } }
                                td { (limits(s)) }
                                td.num { (s.in_flight) }
                                td.nowrap { (site_state(s, now)) }
                                td.small { (s.reason.as_deref().filter(|_| held).unwrap_or("-")) }
                                td {
                                    @if held {
                                        (ctx.form("/shaping/resume", here, html! {
                                            input type="hidden" name="site" value=(s.site);
                                            button type="submit" { "Resume" }
                                        }))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Rules" }
            p.small.muted { "A rule's pattern is searched in the failure text of a message to a site (the server's reply, with its code and enhanced status code). A matched slow or suspend rule defers the message without using an attempt; at the threshold it acts on the site. Add rules with " code { "outbox shaping add-rule" } " or " code { "Admin::shaping().put_rule" } "." }
            @if rules.is_empty() {
                p.muted { "No rule is stored." }
            } @else {
                table #rules {
                    thead { tr { th { "Name" } th { "Site" } th { "Pattern" } th { "Action" } th { "Threshold" } th {} } }
                    tbody {
                        @for r in &rules {
                            @match r {
                                Ok(r) => tr data-rule=(r.name) {
                                    td { (r.name) }
                                    td { (r.site.as_deref().unwrap_or("any")) }
                                    td { code { (r.pattern) } }
                                    td { (r.action.to_string()) }
                                    td.nowrap { (r.threshold) " in " (describe_duration(r.window)) }
                                    td { (ctx.form("/shaping/rules/remove", here, html! {
                                        input type="hidden" name="name" value=(r.name);
                                        button type="submit" { "Remove" }
                                    })) }
                                },
                                Err(e) => tr { td colspan="6" .small { "Unreadable rule: " (e) } },
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(
        &ctx,
        Some(Nav::Shaping),
        "Traffic shaping",
        &flash,
        html! {},
        body,
    )
    .into_response())
}

fn limits(s: &SiteState) -> String {
    let rate = s
        .limit
        .per_second
        .map(|r| format!("{} (burst {})", describe_rate(r), s.limit.burst));
    let cap = s.limit.max_concurrent.map(|n| format!("{n} at once"));
    match (rate, cap) {
        (None, None) => "none".into(),
        (Some(r), None) => r,
        (None, Some(c)) => c,
        (Some(r), Some(c)) => format!("{r}, {c}"),
    }
}

fn site_state(s: &SiteState, now: SystemTime) -> String {
    if let Some(until) = s.suspended_until.filter(|_| s.suspended_at(now)) {
        return format!("suspended until {}", layout::timestamp(until));
    }
    match (s.slow_per_second, s.slowed_until) {
        (Some(rate), Some(until)) if s.slowed_at(now) => format!(
            "slowed to {} until {}",
            describe_rate(rate),
            layout::timestamp(until)
        ),
        _ => "normal".into(),
    }
}

/// The resume form.
#[derive(Deserialize)]
pub(crate) struct SiteForm {
    #[serde(default)]
    back: String,
    site: String,
}

/// POST `/shaping/resume`.
pub(crate) async fn shaping_resume<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<SiteForm>,
) -> PageResult {
    let outcome = match state.admin.shaping().resume(&form.site).await? {
        true => Ok(format!(
            "Site {} resumed: its slowdown and suspension are over.",
            form.site
        )),
        false => Err(format!("There is no site {}.", form.site)),
    };
    Ok(done(&ctx, &form.back, outcome))
}

/// The remove-rule form.
#[derive(Deserialize)]
pub(crate) struct RuleForm {
    #[serde(default)]
    back: String,
    name: String,
}

/// POST `/shaping/rules/remove`.
pub(crate) async fn shaping_rule_remove<B: Backend>(
    AxumState(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Form(form): Form<RuleForm>,
) -> PageResult {
    let outcome = match state.admin.shaping().remove_rule(&form.name).await? {
        true => Ok(format!("Removed rule {}.", form.name)),
        false => Err(format!("There is no rule {}.", form.name)),
    };
    Ok(done(&ctx, &form.back, outcome))
}
