//! The page shell (inline CSS, the live-refresh script), and small rendering helpers.

use std::time::{Duration, SystemTime};

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::{csrf, sampler::Series};

/// What every page needs to link and post: the mount path and the CSRF token.
#[derive(Clone)]
pub(crate) struct Ctx {
    /// The path the router is mounted at, without a trailing slash (`/outbox`, or empty).
    pub(crate) base: String,
    /// The CSRF token for this browser's cookie.
    pub(crate) csrf: String,
}

impl Ctx {
    /// A path under the mount point (`/dead` → `/outbox/dead`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The overview's URL.
    pub(crate) fn home(&self) -> String {
        if self.base.is_empty() {
            "/".into()
        } else {
            self.base.clone()
        }
    }

    /// A POST form with the CSRF token, the page to come back to, and `fields`.
    pub(crate) fn form(&self, action: &str, back: &str, fields: Markup) -> Markup {
        html! {
            form method="post" action=(self.url(action)) class="inline" {
                input type="hidden" name="csrf" value=(self.csrf);
                input type="hidden" name="back" value=(back);
                (fields)
            }
        }
    }
}

const CSS: &str = r#"
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:center}
header a{color:#d0d7de;text-decoration:none}header a:hover,header a.on{color:#fff}
header .brand{font-weight:600;color:#fff;margin-right:12px}
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 16px}h2{font-size:16px;margin:24px 0 8px}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;margin-bottom:16px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;color:#57606a;font-size:12px;text-transform:uppercase;letter-spacing:.03em}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr:last-child td{border-bottom:none}
a{color:#0969da}
.muted{color:#57606a}.small{font-size:12px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600}
.paused{background:#fff8c5;color:#7d4e00;border:1px solid #d4a72c}
.dead{color:#cf222e;font-weight:600}
.open{background:#ffebe9;color:#a40e26;border:1px solid #ff8182}
.flash{padding:8px 12px;border-radius:6px;margin-bottom:12px;background:#dafbe1;border:1px solid #4ac26b}
.flash.err{background:#ffebe9;border-color:#ff8182}
form.inline{display:inline-flex;gap:6px;align-items:center;margin:0}
input[type=text],input[type=number],select{font:inherit;padding:3px 6px;border:1px solid #d0d7de;border-radius:4px}
input[type=number]{width:90px}
button{font:inherit;padding:3px 10px;border:1px solid #d0d7de;border-radius:4px;background:#f6f8fa;cursor:pointer}
button:hover{background:#eaeef2}
button.danger{color:#cf222e}
pre{background:#f6f8fa;border:1px solid #eaeef2;border-radius:4px;padding:8px;overflow:auto;white-space:pre-wrap;word-break:break-word;margin:4px 0}
dl{display:grid;grid-template-columns:160px 1fr;gap:4px 12px;margin:0}dt{color:#57606a}dd{margin:0;word-break:break-all}
iframe{width:100%;height:360px;border:1px solid #d0d7de;border-radius:4px;background:#fff}
.chart rect{fill:#2da44e}.chart text{font-size:10px;fill:#57606a}.chart line{stroke:#d0d7de}
.actions{display:flex;gap:8px;flex-wrap:wrap;margin-top:8px}
.err1{max-width:380px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
section>h2:first-child{margin-top:0}
td .actions{flex-wrap:nowrap;margin-top:0}
#email th{text-transform:none;font-size:13px;letter-spacing:0}
.nowrap{white-space:nowrap}
.bar{display:flex;height:12px;min-width:160px;border-radius:3px;overflow:hidden;background:#eaeef2}
.bar span{display:block;height:100%}.bar .s-delivered{background:#2da44e}.bar .s-dead{background:#cf222e}.bar .s-cancelled{background:#8c959f}
.legend span{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:middle}
.legend .s-delivered{background:#2da44e}.legend .s-dead{background:#cf222e}.legend .s-cancelled{background:#8c959f}.legend .s-remaining{background:#eaeef2;border:1px solid #d0d7de}
.actions.stack{flex-direction:column;align-items:flex-start;gap:4px}
#group-progress th,#group-progress td{padding:6px 5px}#group-progress th{font-size:11px;letter-spacing:0}#group-progress input[type=text]{width:90px}#group-progress .bar{min-width:110px}
#messages th,#messages td{padding:6px 5px}#messages button{white-space:nowrap}#messages code{font-size:12px}
form.filters{display:flex;gap:8px;flex-wrap:wrap;align-items:center}code.reply{white-space:pre-wrap;word-break:break-word}
"#;

/// Refreshes `#live` every 2 s from the same URL with `live=1`, unless a field in it has
/// the focus; every action works without it.
pub(crate) const JS: &str = r#"
(function(){var l=document.getElementById('live');if(!l||!window.fetch)return;
setInterval(function(){var a=document.activeElement;
if(a&&a!==document.body&&l.contains(a)&&a.tagName!=='BUTTON')return;
var u=new URL(location.href);u.searchParams.delete('msg');u.searchParams.delete('err');u.searchParams.delete('sig');u.searchParams.set('live','1');
fetch(u,{credentials:'same-origin'}).then(function(r){return r.ok?r.text():null})
.then(function(h){if(h!==null){l.innerHTML=h;l.dataset.refreshed=String(Date.now());}}).catch(function(){});},2000);})();
"#;

/// Which navigation entry is current.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Overview,
    Dead,
    DeadGroups,
    Groups,
    Messages,
    Suppressions,
    Shaping,
    #[cfg(feature = "webhook")]
    Webhooks,
    #[cfg(feature = "publish")]
    Relays,
}

/// A whole page: header, flash messages, the live part (refreshed by the script) and
/// the rest.
pub(crate) fn page(
    ctx: &Ctx,
    nav: Option<Nav>,
    title: &str,
    flash: &Flash,
    live: Markup,
    rest: Markup,
) -> Markup {
    let on = |n: Nav| if nav == Some(n) { "on" } else { "" };
    #[cfg(feature = "webhook")]
    let webhooks = html! { a class=(on(Nav::Webhooks)) href=(ctx.url("/webhooks")) { "Webhooks" } };
    #[cfg(not(feature = "webhook"))]
    let webhooks = html! {};
    #[cfg(feature = "publish")]
    let relays = html! { a class=(on(Nav::Relays)) href=(ctx.url("/relays")) { "Relays" } };
    #[cfg(not(feature = "publish"))]
    let relays = html! {};
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · outbox admin" }
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    a.brand href=(ctx.home()) { "outbox admin" }
                    a class=(on(Nav::Overview)) href=(ctx.home()) { "Overview" }
                    a class=(on(Nav::Dead)) href=(ctx.url("/dead")) { "Dead letters" }
                    a class=(on(Nav::DeadGroups)) href=(ctx.url("/dead/groups")) { "Dead letters by error" }
                    a class=(on(Nav::Groups)) href=(ctx.url("/groups")) { "Groups" }
                    a class=(on(Nav::Messages)) href=(ctx.url("/messages")) { "Messages" }
                    a class=(on(Nav::Suppressions)) href=(ctx.url("/suppressions")) { "Suppressions" }
                    a class=(on(Nav::Shaping)) href=(ctx.url("/shaping")) { "Shaping" }
                    (webhooks)
                    (relays)
                }
                main {
                    h1 { (title) }
                    @match flash.verified(ctx) {
                        Some((false, m)) => div.flash role="status" { (m) },
                        Some((true, e)) => div.flash.err role="alert" { (e) },
                        None => {},
                    }
                    // Only pages with a live part get one: the script refreshes `#live`
                    // from `?live=1`, which the other pages answer with the whole page.
                    @if !live.0.is_empty() {
                        div #live { (live) }
                    }
                    (rest)
                }
                script { (PreEscaped(JS)) }
            }
        }
    }
}

/// The message after an action, from the redirect's query: its text and its signature
/// under this browser's form token ([`super::csrf::flash_sig`]).
#[derive(Default, serde::Deserialize)]
pub(crate) struct Flash {
    pub(crate) msg: Option<String>,
    pub(crate) err: Option<String>,
    pub(crate) sig: Option<String>,
}

impl Flash {
    /// The banner to show, `(is_error, text)`: only a text this admin signed for this
    /// browser, never one a link from elsewhere put in the URL.
    pub(crate) fn verified(&self, ctx: &Ctx) -> Option<(bool, &str)> {
        let sig = self.sig.as_deref()?;
        let (err, kind, text) = match (&self.msg, &self.err) {
            (Some(m), None) => (false, "msg", m),
            (None, Some(e)) => (true, "err", e),
            _ => return None,
        };
        csrf::flash_verify(&ctx.csrf, kind, text, sig).then_some((err, text.as_str()))
    }
}

/// An age or an estimate to the second ([`crate::units::duration`]): `3m 20s`, `2h 5m`.
pub(crate) fn duration(d: Duration) -> String {
    crate::units::duration(Duration::from_secs(d.as_secs()))
}

/// How long ago `t` was.
pub(crate) fn ago(t: SystemTime) -> String {
    format!(
        "{} ago",
        duration(SystemTime::now().duration_since(t).unwrap_or_default())
    )
}

/// A UTC timestamp, `2024-05-01 12:00:00 UTC`.
/// The section listing a message's failed attempts (nothing when it has none); `error` is
/// the heading of the error column.
pub(crate) fn attempts(log: &[crate::FailedAttempt], error: &str) -> Markup {
    html! {
        @if !log.is_empty() {
            section #attempts {
                h2 { "Attempts" }
                table {
                    thead { tr { th.n { "#" } th { "Ended" } th { (error) } } }
                    tbody {
                        @for a in log {
                            tr {
                                td.n { (a.attempt) }
                                td.nowrap { (timestamp(a.at)) }
                                td { code.reply { (a.error) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// What downstreams said about a message: its receipts and later events, oldest first.
pub(crate) fn events(events: &[crate::MessageEvent]) -> Markup {
    html! {
        @if !events.is_empty() {
            section #events {
                h2 { "Events" }
                table {
                    thead { tr { th { "When" } th { "From" } th { "What" } th { "Recipient" } th { "Their id" } th { "Detail" } } }
                    tbody {
                        @for e in events {
                            tr data-kind=(e.kind) {
                                td.nowrap { (timestamp(e.at)) }
                                td { (e.provider) }
                                td { (e.kind) }
                                td { @if let Some(r) = &e.recipient { (r) } }
                                td { code { (e.external_id) } }
                                td { code.reply { (e.detail) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) fn timestamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let (days, rem) = (secs / 86400, secs % 86400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A number with at most two decimals and no trailing zeros.
pub(crate) fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The last hour's deliveries as bars, one per minute.
pub(crate) fn chart(series: &Series, what: &str) -> Markup {
    let (w, h, left, bottom) = (600.0, 110.0, 36.0, 16.0);
    let max = series.per_minute.iter().copied().max().unwrap_or(0);
    let top = max.max(1) as f64;
    let bar = (w - left) / 60.0;
    let total: u64 = series.per_minute.iter().sum();
    html! {
        svg.chart width=(w) height=(h) viewBox={ "0 0 " (w) " " (h) } role="img"
            aria-label={ (what) ": " (total) " delivered in the last hour" } {
            line x1=(left) y1=(h - bottom) x2=(w) y2=(h - bottom) {}
            line x1=(left) y1="4" x2=(w) y2="4" stroke-dasharray="2 3" {}
            text x="0" y="12" { (max) "/min" }
            text x="0" y=(h - bottom) { "0" }
            text x=(left) y=(h - 2.0) { "60 min ago" }
            text x=(w - 24.0) y=(h - 2.0) { "now" }
            @for (i, n) in series.per_minute.iter().enumerate() {
                @if *n > 0 {
                    @let bh = (*n as f64 / top) * (h - bottom - 6.0);
                    rect x=(left + i as f64 * bar + 1.0) y=(h - bottom - bh) width=(bar - 2.0) height=(bh) {
                        title { (n) " delivered, " (59 - i) " min ago" }
                    }
                }
            }
        }
        p.muted.small {
            (total) " delivered in the last "
            (duration(series.covered))
            " (as every process reported its deliveries; kept across restarts)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_ages_read_well() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_714_564_800 + 3661);
        assert_eq!(timestamp(t), "2024-05-01 13:01:01 UTC");
        // Ages and estimates are cut to the second.
        assert_eq!(duration(Duration::from_millis(3_725_400)), "1h 2m 5s");
        assert_eq!(duration(Duration::from_millis(400)), "0s");
    }
}
