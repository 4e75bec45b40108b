//! The relay's page (`/relays`, feature `publish`): the events waiting to be published to
//! the broker, how many went out per minute, failed attempts and dead letters, the
//! relay's breaker, the order keys a failing event holds and the last hour's chart; the
//! type's page has the pause form and its dead letters.

use std::time::Duration;

use axum::{extract::Query, Extension};
use maud::html;

use super::{
    layout::{self, chart, Ctx, Flash, Nav},
    pages::{held_table, respond, seg, Live, PageResult, St},
};
use crate::{backend::Backend, publish::EVENT_TYPE};

/// How far back the page's publish figures go.
const WINDOW: Duration = Duration::from_secs(600);

/// `GET /relays`.
pub(crate) async fn relays_page<B: Backend>(
    axum::extract::State(state): St<B>,
    Extension(ctx): Extension<Ctx>,
    Query(live_only): Query<Live>,
    Query(flash): Query<Flash>,
) -> PageResult {
    let s = state.admin.type_summary(EVENT_TYPE, WINDOW).await?;
    let c = &s.counts;
    let type_page = ctx.url(&format!("/types/{}", seg(EVENT_TYPE)));
    let live = html! {
        section {
            table #relay {
                tbody {
                    tr {
                        th { "Waiting" }
                        td.n #waiting { (s.waiting()) }
                        td.muted {
                            "pending " (c.pending) ", scheduled " (c.scheduled) ", running "
                            (c.running) ", retrying " (c.retrying) ", paused " (c.paused)
                            @if let Some(d) = s.oldest_due_for() {
                                "; the oldest due for " (layout::duration(d))
                            }
                        }
                    }
                    tr {
                        th { "Published per minute" }
                        td.n #per-minute { (format!("{:.0}", s.per_minute())) }
                        td.muted {
                            (s.delivered) " in the last " (layout::duration(s.window)) "; "
                            (s.delivered_last_minute) " in the last whole minute"
                        }
                    }
                    tr {
                        th { "Failed" }
                        td.n #failed { (s.failed) }
                        td.muted {
                            "attempts to be retried in the last " (layout::duration(s.window))
                            "; " (s.dead) " dead letter(s) then, " (c.dead) " in all"
                        }
                    }
                    tr {
                        th { "Breaker" }
                        @match &s.breaker {
                            Some(b) if b.is_open() => {
                                td #breaker { span.badge.paused { "open" } }
                                td {
                                    @if let Some(at) = b.opened_at { (layout::ago(at)) ": " }
                                    (b.reason.as_deref().unwrap_or(""))
                                    " — events wait, none is burnt"
                                }
                            }
                            Some(b) => {
                                td #breaker { "closed" }
                                td.muted { "opened " (b.times_opened) " time(s) in all" }
                            }
                            None => {
                                td #breaker { "closed" }
                                td.muted { "never opened" }
                            }
                        }
                    }
                }
            }
        }
        section {
            h2 { "Held order keys" }
            @if s.held.is_empty() {
                p.muted #no-held { "None: no failing event holds its key." }
            } @else {
                p.muted { "Each key's later events wait behind this one: a dead one until it is requeued or purged, a retrying one until its retry succeeds or it is cancelled." }
                (held_table(&ctx, &s.held))
            }
        }
        section {
            h2 { "Published, last hour" }
            (chart(&state.samples.series(Some(EVENT_TYPE)), EVENT_TYPE))
        }
    };
    Ok(respond(
        &ctx,
        Some(Nav::Relays),
        "Relay to the broker",
        &live_only,
        &flash,
        live,
        || {
            html! {
                p { "Pause or resume the relay and see its dead letters on the page of type "
                    a href=(type_page) { code { (EVENT_TYPE) } } "." }
            }
        },
    ))
}
