//! `shaping …`: traffic shaping's sites and rules from the command line.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::{
    args::{ShapingAddRuleArgs, ShapingCommand},
    exec::{Ctx, Result},
    failure::Failure,
    render::{self, print_json},
};
use crate::{
    backend::Backend, describe_duration, describe_rate, RuleAction, ShapingRule, SiteState,
};

impl<B: Backend> Ctx<B> {
    /// `shaping …`.
    pub(super) async fn shaping(&self, command: &ShapingCommand) -> Result<()> {
        let shaping = self.admin.shaping();
        match command {
            ShapingCommand::Sites => {
                let sites = shaping.sites().await?;
                let now = SystemTime::now();
                if self.json {
                    let items: Vec<Value> = sites.iter().map(|s| site_json(s, now)).collect();
                    print_json(&Value::Array(items));
                    return Ok(());
                }
                if sites.is_empty() {
                    println!("no site is shaped (no limits configured, no rule has acted)");
                    return Ok(());
                }
                let mut t =
                    render::table(&["SITE", "LIMITS", "IN FLIGHT", "STATE", "REASON"], &[2]);
                for s in &sites {
                    t.add_row(vec![
                        s.site.clone(),
                        limits(s),
                        s.in_flight.to_string(),
                        state(s, now),
                        render::one_line(s.reason.as_deref().unwrap_or("-"), 60),
                    ]);
                }
                render::print_table(&t);
                Ok(())
            }
            ShapingCommand::Resume(args) => {
                if !shaping.resume(&args.site).await? {
                    return Err(Failure::Message(format!(
                        "no site `{}`; see {}",
                        args.site,
                        self.hints.cmd("shaping sites")
                    )));
                }
                if self.json {
                    print_json(&json!({ "resumed": args.site }));
                } else {
                    println!(
                        "site `{}` resumed: its slowdown and suspension are over (running outboxes see it within a second)",
                        args.site
                    );
                }
                Ok(())
            }
            ShapingCommand::Rules => {
                let rules = shaping.rules().await?;
                if self.json {
                    let items: Vec<Value> = rules
                        .iter()
                        .map(|r| match r {
                            Ok(r) => rule_json(r),
                            Err(e) => json!({ "error": e }),
                        })
                        .collect();
                    print_json(&Value::Array(items));
                    return Ok(());
                }
                if rules.is_empty() {
                    println!("no shaping rule is stored");
                    return Ok(());
                }
                let mut t = render::table(&["NAME", "SITE", "PATTERN", "ACTION", "THRESHOLD"], &[]);
                for r in &rules {
                    match r {
                        Ok(r) => t.add_row(vec![
                            r.name.clone(),
                            r.site.clone().unwrap_or_else(|| "*".into()),
                            render::one_line(&r.pattern, 50),
                            r.action.to_string(),
                            format!("{} in {}", r.threshold, describe_duration(r.window)),
                        ]),
                        Err(e) => t.add_row(vec![
                            "(unreadable)".into(),
                            "-".into(),
                            "-".into(),
                            render::one_line(e, 60),
                            "-".into(),
                        ]),
                    };
                }
                render::print_table(&t);
                Ok(())
            }
            ShapingCommand::AddRule(args) => {
                let rule = rule_of(args).map_err(Failure::Message)?;
                shaping.put_rule(&rule).await?;
                if self.json {
                    print_json(&rule_json(&rule));
                } else {
                    println!("stored rule {rule} (running outboxes use it within 5 s)");
                }
                Ok(())
            }
            ShapingCommand::RemoveRule(args) => {
                if !shaping.remove_rule(&args.name).await? {
                    return Err(Failure::Message(format!(
                        "no rule `{}`; see {}",
                        args.name,
                        self.hints.cmd("shaping rules")
                    )));
                }
                if self.json {
                    print_json(&json!({ "removed": args.name }));
                } else {
                    println!(
                        "removed rule `{}` (a rule of an outbox's configuration comes back when it starts)",
                        args.name
                    );
                }
                Ok(())
            }
        }
    }
}

/// The rule `add-rule` describes.
fn rule_of(args: &ShapingAddRuleArgs) -> std::result::Result<ShapingRule, String> {
    let action = match (args.slow, args.suspend, args.bounce) {
        (Some(per_second), false, false) => RuleAction::Slow {
            per_second,
            duration: args.duration,
        },
        (None, true, false) => RuleAction::Suspend {
            duration: args.duration,
        },
        (None, false, true) => RuleAction::Bounce,
        _ => return Err("say what the rule does: --slow RATE, --suspend or --bounce".into()),
    };
    let mut rule =
        ShapingRule::new(&args.name, &args.pattern, action)?.threshold(args.threshold, args.window);
    if let Some(site) = &args.site {
        rule = rule.at_site(site);
    }
    rule.check()?;
    Ok(rule)
}

fn limits(s: &SiteState) -> String {
    let rate = s
        .limit
        .per_second
        .map(|r| format!("{} burst {}", describe_rate(r), s.limit.burst));
    let cap = s.limit.max_concurrent.map(|n| format!("{n} at once"));
    match (rate, cap) {
        (None, None) => "-".into(),
        (Some(r), None) => r,
        (None, Some(c)) => c,
        (Some(r), Some(c)) => format!("{r}, {c}"),
    }
}

fn state(s: &SiteState, now: SystemTime) -> String {
    if let Some(until) = s.suspended_until.filter(|_| s.suspended_at(now)) {
        return format!("suspended until {}", render::time(until));
    }
    match (s.slow_per_second, s.slowed_until) {
        (Some(rate), Some(until)) if s.slowed_at(now) => format!(
            "slowed to {} until {}",
            describe_rate(rate),
            render::time(until)
        ),
        _ => "normal".into(),
    }
}

fn site_json(s: &SiteState, now: SystemTime) -> Value {
    json!({
        "site": s.site,
        "per_second": s.limit.per_second,
        "burst": s.limit.burst,
        "max_concurrent": s.limit.max_concurrent,
        "configured": s.configured,
        "in_flight": s.in_flight,
        "slowed": s.slowed_at(now),
        "slow_per_second": s.slow_per_second.filter(|_| s.slowed_at(now)),
        "slowed_until": s.slowed_until.filter(|_| s.slowed_at(now)).map(render::time),
        "suspended_until": s.suspended_until.filter(|_| s.suspended_at(now)).map(render::time),
        "reason": s.reason,
    })
}

fn rule_json(r: &ShapingRule) -> Value {
    let (per_second, duration) = match &r.action {
        RuleAction::Slow {
            per_second,
            duration,
        } => (Some(*per_second), Some(duration.as_secs_f64())),
        RuleAction::Suspend { duration } => (None, Some(duration.as_secs_f64())),
        RuleAction::Bounce => (None, None),
    };
    json!({
        "name": r.name,
        "site": r.site,
        "pattern": r.pattern,
        "action": r.action.kind(),
        "per_second": per_second,
        "duration_secs": duration,
        "threshold": r.threshold,
        "window_secs": r.window.as_secs_f64(),
    })
}
