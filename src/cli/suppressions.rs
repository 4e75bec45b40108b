//! `suppressions …`: the suppression list from the command line.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::{
    args::SuppressionsCommand,
    exec::{Ctx, Result},
    failure::Failure,
    render::{self, print_json},
};
use crate::{backend::Backend, NewSuppression, SuppressedMessage, Suppression, SuppressionFilter};

impl<B: Backend> Ctx<B> {
    /// `suppressions …`.
    pub(super) async fn suppressions(&self, command: &SuppressionsCommand) -> Result<()> {
        let list = self.admin.suppressions();
        match command {
            SuppressionsCommand::List(args) => {
                let filter = SuppressionFilter {
                    address: args.address.clone(),
                    reason: args.reason,
                };
                let total = list.count(&filter).await?;
                let entries = list.list(&filter, args.limit, args.offset).await?;
                if self.json {
                    let items: Vec<Value> = entries.iter().map(entry_json).collect();
                    print_json(&json!({ "total": total, "suppressions": items }));
                    return Ok(());
                }
                if entries.is_empty() {
                    println!("no suppressions match ({total} in all)");
                    return Ok(());
                }
                let mut t = render::table(
                    &["ADDRESS", "SCOPE", "REASON", "SOURCE", "SINCE", "EXPIRES"],
                    &[],
                );
                for e in &entries {
                    t.add_row(vec![
                        e.address.clone(),
                        e.scope.key(),
                        e.reason.to_string(),
                        render::one_line(e.source.as_deref().unwrap_or("-"), 40),
                        render::time(e.created_at),
                        e.expires_at.map_or("never".into(), render::time),
                    ]);
                }
                render::print_table(&t);
                println!("{} of {total} shown", entries.len());
                Ok(())
            }
            SuppressionsCommand::Add(args) => {
                let mut entry = NewSuppression::new(&args.address, args.scope.clone(), args.reason)
                    .map_err(Failure::Message)?
                    .source(args.source.clone());
                if let Some(d) = args.expires_in {
                    entry = entry.expires_at(SystemTime::now() + d);
                }
                list.add(entry.clone()).await?;
                if self.json {
                    print_json(&json!({
                        "added": entry.address, "scope": entry.scope.key(), "reason": entry.reason.as_str(),
                    }));
                } else {
                    println!(
                        "suppressed {} ({}, {}): no such mail is enqueued or sent to it from now on",
                        entry.address,
                        entry.scope,
                        entry.reason
                    );
                }
                Ok(())
            }
            SuppressionsCommand::Remove(args) => {
                if !list.remove(&args.address, &args.scope).await? {
                    return Err(Failure::Message(format!(
                        "{} has no suppression in scope `{}`; see {}",
                        args.address,
                        args.scope,
                        self.hints
                            .cmd(&format!("suppressions list --address {}", args.address))
                    )));
                }
                if self.json {
                    print_json(&json!({ "removed": args.address, "scope": args.scope.key() }));
                } else {
                    println!(
                        "removed the suppression of {} in `{}` (messages it stopped stay \
                         suppressed; enqueue them again, with a new idempotency key if they had one)",
                        args.address, args.scope
                    );
                }
                Ok(())
            }
            SuppressionsCommand::Stopped(args) => {
                let stopped = list.stopped_messages(args.limit).await?;
                if self.json {
                    let items: Vec<Value> = stopped.iter().map(stopped_json).collect();
                    print_json(&Value::Array(items));
                    return Ok(());
                }
                if stopped.is_empty() {
                    println!("no message was stopped by a suppression (or they were pruned)");
                    return Ok(());
                }
                let mut t = render::table(&["ID", "TYPE", "GROUP", "STOPPED", "BY"], &[]);
                for m in &stopped {
                    t.add_row(vec![
                        m.id.clone(),
                        m.type_tag.clone(),
                        m.group.clone().unwrap_or_else(|| "-".into()),
                        render::time(m.at),
                        render::one_line(&m.reason, 70),
                    ]);
                }
                render::print_table(&t);
                Ok(())
            }
        }
    }
}

fn entry_json(e: &Suppression) -> Value {
    json!({
        "address": e.address,
        "scope": e.scope.key(),
        "reason": e.reason.as_str(),
        "source": e.source,
        "created_at": render::time(e.created_at),
        "expires_at": e.expires_at.map(render::time),
    })
}

fn stopped_json(m: &SuppressedMessage) -> Value {
    json!({
        "id": m.id,
        "type": m.type_tag,
        "group": m.group,
        "stopped_at": render::time(m.at),
        "reason": m.reason,
    })
}
