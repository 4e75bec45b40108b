//! `relays`: the relay of events to a message broker at a glance (feature `publish`).

use serde_json::{json, Value};

use super::{
    args::RelaysArgs,
    exec::{Ctx, Result},
    live::held_json,
    render::{self, print_json},
};
use crate::{backend::Backend, publish::EVENT_TYPE, TypeSummary};

impl<B: Backend> Ctx<B> {
    /// `relays`.
    pub(super) async fn relays(&self, args: &RelaysArgs) -> Result<()> {
        let s = self.admin.type_summary(EVENT_TYPE, args.window).await?;
        if self.json {
            print_json(&summary_json(&s));
            return Ok(());
        }
        let c = &s.counts;
        let window = render::duration(s.window);
        println!("relay `{EVENT_TYPE}` (events to a message broker)");
        let oldest = match s.oldest_due_for() {
            Some(d) => format!(", the oldest due for {}", render::duration(d)),
            None => String::new(),
        };
        println!(
            "  waiting    {} (pending {}, scheduled {}, running {}, retrying {}, paused {}){oldest}",
            s.waiting(),
            c.pending,
            c.scheduled,
            c.running,
            c.retrying,
            c.paused
        );
        println!(
            "  published  {:.0}/min over the last {window} ({} events); {} in the last whole minute",
            s.per_minute(),
            s.delivered,
            s.delivered_last_minute
        );
        println!(
            "  failed     {} attempt(s) to be retried and {} dead letter(s) in the last {window}; \
             {} dead letter(s) in all",
            s.failed, s.dead, c.dead
        );
        match &s.breaker {
            Some(b) if b.is_open() => {
                let since = b
                    .opened_at
                    .map(|t| render::duration(render::age(t, s.now)))
                    .unwrap_or_default();
                let probe = b
                    .next_probe_in
                    .map(|d| format!(", next probe in {}", render::duration(d)))
                    .unwrap_or_default();
                println!(
                    "  breaker    OPEN for {since}: {}{probe} (events wait; nothing is burnt)",
                    render::one_line(b.reason.as_deref().unwrap_or(""), 100)
                );
            }
            Some(b) => println!(
                "  breaker    closed (opened {} time(s) in all)",
                b.times_opened
            ),
            None => println!("  breaker    closed (never opened)"),
        }
        if s.held.is_empty() {
            println!("  held keys  none");
            return Ok(());
        }
        println!(
            "  held keys  {} (a failing event holds its key's later ones):",
            s.held.len()
        );
        self.print_held(&s.held);
        Ok(())
    }
}

/// `relays --json`: one object.
fn summary_json(s: &TypeSummary) -> Value {
    let c = &s.counts;
    let breaker = s.breaker.as_ref().map(|b| {
        json!({
            "open": b.is_open(),
            "opened_at": b.opened_at.map(render::time),
            "reason": b.reason,
            "next_probe_in_secs": b.next_probe_in.map(|d| d.as_secs()),
            "times_opened": b.times_opened,
        })
    });
    json!({
        "type": c.type_tag,
        "waiting": s.waiting(),
        "pending": c.pending,
        "scheduled": c.scheduled,
        "running": c.running,
        "retrying": c.retrying,
        "paused": c.paused,
        "dead_in_all": c.dead,
        "oldest_due_secs": s.oldest_due_for().map(|d| d.as_secs()),
        "window_secs": s.window.as_secs(),
        "published": s.delivered,
        "published_per_minute": s.per_minute(),
        "published_last_minute": s.delivered_last_minute,
        "failed": s.failed,
        "dead": s.dead,
        "breaker": breaker,
        "held": held_json(&s.held),
    })
}
