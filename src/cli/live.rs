//! The commands on groups (campaigns) and on live messages: `groups`, `group
//! show|pause|resume|cancel` and `messages list|show|retry|cancel`.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::{
    args::{
        GroupCommand, MessageFilterArgs, MessagesActionArgs, MessagesCommand, MessagesListArgs,
    },
    exec::{Ctx, Result},
    failure::Failure,
    render::{self, print_json},
};
use crate::{
    backend::Backend, GroupProgress, HeldKey, LiveFilter, LiveMessage, LiveMessageDetail,
    LiveState, MessageId,
};

impl<B: Backend> Ctx<B> {
    /// `groups`: every group with its progress.
    pub(super) async fn groups(&self) -> Result<()> {
        let groups = self.admin.groups().list().await?;
        if self.json {
            let items: Vec<Value> = groups.iter().map(group_json).collect();
            print_json(&Value::Array(items));
            return Ok(());
        }
        if groups.is_empty() {
            println!("no groups: enqueue messages with EnqueueOptions::group to make one");
            return Ok(());
        }
        let mut t = render::table(
            &[
                "GROUP",
                "PENDING",
                "SCHEDULED",
                "RUNNING",
                "RETRYING",
                "PAUSED",
                "DELIVERED",
                "DEAD",
                "CANCELLED",
                "SUPPRESSED",
                "DONE",
                "RATE",
                "ETA",
                "STATE",
            ],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        );
        for g in &groups {
            t.add_row(vec![
                g.name.clone(),
                g.pending.to_string(),
                g.scheduled.to_string(),
                g.running.to_string(),
                g.retrying.to_string(),
                g.paused.to_string(),
                g.delivered.to_string(),
                g.dead.to_string(),
                g.cancelled.to_string(),
                g.suppressed.to_string(),
                format!("{}%", done_percent(g)),
                rate_text(g.rate),
                g.eta().map_or("-".into(), render::duration),
                group_state(g),
            ]);
        }
        render::print_table(&t);
        Ok(())
    }

    /// `group …`.
    pub(super) async fn group(&self, command: &GroupCommand) -> Result<()> {
        match command {
            GroupCommand::Show(args) => self.group_show(&args.name).await,
            GroupCommand::Pause(args) => self.group_pause(&args.name, &args.reason).await,
            GroupCommand::Resume(args) => self.group_resume(&args.name).await,
            GroupCommand::Cancel(args) => self.group_cancel(&args.name, args.yes).await,
        }
    }

    async fn group_show(&self, name: &str) -> Result<()> {
        let g = self.known_group(name).await?;
        if self.json {
            print_json(&group_json(&g));
            return Ok(());
        }
        let now = SystemTime::now();
        println!("group:       {}", g.name);
        match (&g.paused_at, &g.pause_reason) {
            (Some(at), reason) => println!(
                "state:       paused {} ago: {}",
                render::duration(render::age(*at, now)),
                reason.as_deref().unwrap_or("")
            ),
            (None, _) if g.remaining() == 0 => println!("state:       finished"),
            (None, _) => println!("state:       running"),
        }
        println!(
            "progress:    {} of {} finished ({}%), {} remaining",
            g.total() - g.remaining(),
            g.total(),
            done_percent(&g),
            g.remaining()
        );
        println!("pending:     {}", g.pending);
        println!("scheduled:   {}", g.scheduled);
        println!("running:     {}", g.running);
        println!("retrying:    {}", g.retrying);
        println!("paused:      {}", g.paused);
        println!("delivered:   {}", g.delivered);
        println!("dead:        {}", g.dead);
        println!("cancelled:   {}", g.cancelled);
        println!("suppressed:  {}", g.suppressed);
        println!("rate:        {}", rate_text(g.rate));
        println!(
            "eta:         {}",
            g.eta().map_or("-".into(), render::duration)
        );
        if let Some(t) = g.first_delivered_at {
            println!("first delivery: {}", render::time(t));
        }
        if let Some(t) = g.last_delivered_at {
            println!("last delivery:  {}", render::time(t));
        }
        if let Some(hook) = &g.hook {
            match g.completed_at {
                Some(t) => println!("on complete: `{hook}`, enqueued at {}", render::time(t)),
                None => println!("on complete: `{hook}`, enqueued once the group finishes"),
            }
        }
        Ok(())
    }

    async fn group_pause(&self, name: &str, reason: &str) -> Result<()> {
        let groups = self.admin.groups();
        let known = groups.show(name).await?.is_some();
        groups.pause(name, reason).await.map_err(|e| match e {
            crate::Error::Config(why) => {
                Failure::Message(format!("`{name}` cannot be a group name: {why}"))
            }
            other => Failure::Db(other),
        })?;
        if !known {
            eprintln!(
                "note: no group `{name}` was known yet; paused anyway, so its messages wait \
                 once enqueued (check the spelling with {})",
                self.hints.cmd("groups")
            );
        }
        if self.json {
            print_json(&json!({ "paused": name, "reason": reason }));
        } else {
            println!(
                "paused group `{name}`: no process starts its messages within 0.2 s; they stay \
                 queued until {}",
                self.hints.cmd(&format!("group resume {name}"))
            );
        }
        Ok(())
    }

    async fn group_resume(&self, name: &str) -> Result<()> {
        if !self.admin.groups().resume(name).await? {
            let paused: Vec<String> = self
                .admin
                .groups()
                .list()
                .await?
                .into_iter()
                .filter(GroupProgress::is_paused)
                .map(|g| g.name)
                .collect();
            return Err(Failure::Message(format!(
                "group `{name}` is not paused; paused groups: {}",
                if paused.is_empty() {
                    "none".to_owned()
                } else {
                    paused.join(", ")
                }
            )));
        }
        if self.json {
            print_json(&json!({ "resumed": name }));
        } else {
            println!("resumed group `{name}`: its messages start again within 0.2 s");
        }
        Ok(())
    }

    async fn group_cancel(&self, name: &str, yes: bool) -> Result<()> {
        let g = self.known_group(name).await?;
        let queued = g.remaining() - g.running;
        let cancelled = if queued == 0 {
            0
        } else {
            self.confirm(
                yes,
                &format!("cancel the {queued} queued message(s) of group `{name}`"),
            )?;
            self.admin.groups().cancel(name).await?
        };
        if self.json {
            print_json(&json!({ "group": name, "cancelled": cancelled, "running": g.running }));
        } else {
            println!("cancelled {cancelled} message(s) of group `{name}`");
            if g.running > 0 {
                println!(
                    "{} running message(s) finish (a cancel does not stop them)",
                    g.running
                );
            }
        }
        Ok(())
    }

    /// The group `name`, or an error listing the groups there are.
    async fn known_group(&self, name: &str) -> Result<GroupProgress> {
        if let Some(g) = self.admin.groups().show(name).await? {
            return Ok(g);
        }
        Err(self.unknown_group(name).await)
    }

    /// Says that there is no group `name`, and which groups there are.
    async fn unknown_group(&self, name: &str) -> Failure {
        let names = match self.admin.groups().list().await {
            Ok(groups) => groups.into_iter().map(|g| g.name).collect::<Vec<_>>(),
            Err(e) => return Failure::Db(e),
        };
        Failure::Message(format!(
            "there is no group `{name}` (groups: {}); check the name ({} lists them)",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            },
            self.hints.cmd("groups")
        ))
    }

    /// `messages …`.
    pub(super) async fn messages(&self, command: &MessagesCommand) -> Result<()> {
        match command {
            MessagesCommand::List(args) => self.messages_list(args).await,
            MessagesCommand::Show(args) => self.message_show(&args.id).await,
            MessagesCommand::Retry(args) => self.messages_retry(args).await,
            MessagesCommand::Cancel(args) => self.messages_cancel(args).await,
            MessagesCommand::Held(args) => self.messages_held(&args.type_tag).await,
        }
    }

    /// `messages held TYPE`.
    async fn messages_held(&self, type_tag: &str) -> Result<()> {
        self.known_type(type_tag).await?;
        let held = self.admin.messages().held_keys(type_tag).await?;
        if self.json {
            print_json(&json!({ "type": type_tag, "held": held_json(&held) }));
            return Ok(());
        }
        if held.is_empty() {
            println!("no order key of `{type_tag}` is held");
            return Ok(());
        }
        self.print_held(&held);
        Ok(())
    }

    /// Held order keys as a table, then how to free them (`messages held`, `relays`).
    pub(super) fn print_held(&self, held: &[HeldKey]) {
        let mut t = render::table(
            &["KEY", "HELD BY", "MESSAGE", "WAITING", "LAST ERROR"],
            &[3],
        );
        for h in held {
            t.add_row(vec![
                render::one_line(&h.key, 40),
                h.held_by.as_str().to_owned(),
                h.message_id.clone(),
                h.waiting.to_string(),
                render::one_line(&h.last_error, 60),
            ]);
        }
        render::print_table(&t);
        println!(
            "A dead key goes on once its dead letter is requeued ({}) or purged ({}); a \
             retrying one once its retry succeeds or it is cancelled ({}).",
            self.hints.cmd("dead requeue ID"),
            self.hints.cmd("dead purge ID"),
            self.hints.cmd("messages cancel ID"),
        );
    }

    /// The filter the arguments describe, after checking the type and group exist.
    async fn live_filter(&self, args: &MessageFilterArgs) -> Result<LiveFilter> {
        let mut filter = LiveFilter::all();
        if let Some(t) = &args.type_tag {
            self.known_type(t).await?;
            filter = filter.of_type(t);
        }
        if let Some(g) = &args.group {
            self.known_group(g).await?;
            filter = filter.in_group(g);
        }
        if let Some(s) = args.state {
            filter = filter.state(s);
        }
        if let Some(p) = &args.key_prefix {
            filter = filter.key_prefix(p);
        }
        if let Some(e) = &args.error {
            filter = filter.error_contains(e);
        }
        if let Some(r) = &args.recipient {
            filter = filter.to(r);
        }
        Ok(filter)
    }

    async fn messages_list(&self, args: &MessagesListArgs) -> Result<()> {
        let filter = self.live_filter(&args.filter).await?;
        let after = args.after.as_deref().map(MessageId::from_string);
        let page = self
            .admin
            .messages()
            .list(&filter, after.as_ref(), args.limit)
            .await?;
        let next = page.next.as_ref().map(MessageId::as_str);
        if self.json {
            let items: Vec<Value> = page.messages.iter().map(live_json).collect();
            print_json(&json!({ "messages": items, "next": next }));
            return Ok(());
        }
        if page.messages.is_empty() {
            println!(
                "no queued messages match{}",
                if args.after.is_some() {
                    " after that id"
                } else {
                    ""
                }
            );
            return Ok(());
        }
        let now = SystemTime::now();
        let mut t = render::table(
            &[
                "ID",
                "TYPE",
                "STATE",
                "GROUP",
                "ATTEMPTS",
                "DUE",
                "LAST ERROR",
            ],
            &[4],
        );
        for m in &page.messages {
            t.add_row(vec![
                m.id.to_string(),
                m.type_tag.clone(),
                m.state.as_str().to_owned(),
                m.group.clone().unwrap_or_else(|| "-".into()),
                format!("{}/{}", m.attempts, m.max_attempts),
                due_text(m.due_at, now),
                m.last_error
                    .as_deref()
                    .map_or("-".into(), |e| render::one_line(e, 60)),
            ]);
        }
        render::print_table(&t);
        if let Some(next) = next {
            println!("next page: --after {next}");
        }
        Ok(())
    }

    async fn message_show(&self, id: &str) -> Result<()> {
        let d = self.live_message(id).await?;
        if self.json {
            let mut v = live_json(&d.message);
            v["payload"] = render::payload_value(&d.payload);
            print_json(&v);
            return Ok(());
        }
        let m = &d.message;
        let now = SystemTime::now();
        println!("id:          {}", m.id);
        println!("type:        {}", m.type_tag);
        println!("state:       {}", m.state.as_str());
        if let Some(g) = &m.group {
            println!("group:       {g}");
        }
        println!("attempts:    {} of {}", m.attempts, m.max_attempts);
        println!("priority:    {}", m.priority);
        if let Some(key) = &m.idempotency_key {
            println!("key:         {key}");
        }
        println!("enqueued at: {}", render::time(m.enqueued_at));
        println!(
            "due at:      {} ({})",
            render::time(m.due_at),
            due_text(m.due_at, now)
        );
        if let Some(owner) = &m.lease_owner {
            println!("lease owner: {owner}");
        }
        if let Some(t) = m.lease_expires_at {
            println!("lease until: {}", render::time(t));
        }
        if let Some(e) = &m.last_error {
            println!("last error:");
            render::print_stored_lines(e);
        }
        render::print_attempts_and_payload(&m.attempt_log, &d.payload);
        Ok(())
    }

    async fn messages_retry(&self, args: &MessagesActionArgs) -> Result<()> {
        let messages = self.admin.messages();
        let retried = if let Some(id) = &args.id {
            let d = self.live_message(id).await?;
            let n = messages.retry_now_where(&LiveFilter::id(id)).await?;
            if n == 0 && d.message.state == LiveState::Running {
                return Err(Failure::Message(format!(
                    "message {id} is running now: its worker finishes it (a retry applies to \
                     queued messages only)"
                )));
            }
            if n == 0 && !self.json {
                if d.message.state == LiveState::Paused {
                    println!(
                        "message {id} is already due but held: its type or its group is paused \
                         (resume it to let the message start)"
                    );
                } else {
                    println!("message {id} is already due; a worker starts it when one is free");
                }
                return Ok(());
            }
            n
        } else {
            let (filter, what) = self.bulk_filter(args).await?;
            let n = messages.count(&filter).await?;
            if n == 0 {
                0
            } else {
                self.confirm(
                    args.yes,
                    &format!("make the queued ones of {n} {what} due now"),
                )?;
                messages.retry_now_where(&filter).await?
            }
        };
        if self.json {
            print_json(&json!({ "retried": retried }));
        } else {
            println!("made {retried} message(s) due now (their attempts are kept)");
        }
        Ok(())
    }

    async fn messages_cancel(&self, args: &MessagesActionArgs) -> Result<()> {
        let messages = self.admin.messages();
        let cancelled = if let Some(id) = &args.id {
            self.live_message(id).await?;
            if !messages.cancel(&MessageId::from_string(id.clone())).await? {
                return Err(Failure::Message(format!(
                    "message {id} is running now, or just finished: a cancel does not stop a \
                     running message (its worker finishes it)"
                )));
            }
            1
        } else {
            let (filter, what) = self.bulk_filter(args).await?;
            let n = messages.count(&filter).await?;
            if n == 0 {
                0
            } else {
                self.confirm(args.yes, &format!("cancel {n} {what}"))?;
                messages.cancel_where(&filter).await?
            }
        };
        if self.json {
            print_json(&json!({ "cancelled": cancelled }));
        } else {
            println!("cancelled {cancelled} message(s)");
        }
        Ok(())
    }

    /// The filter of a bulk retry or cancel, and the words naming what it matches.
    async fn bulk_filter(&self, args: &MessagesActionArgs) -> Result<(LiveFilter, String)> {
        let filter = self.live_filter(&args.filter).await?;
        let mut what = vec!["queued message(s)".to_owned()];
        let f = &args.filter;
        if let Some(t) = &f.type_tag {
            what.push(format!("of type `{t}`"));
        }
        if let Some(g) = &f.group {
            what.push(format!("in group `{g}`"));
        }
        if let Some(s) = f.state {
            what.push(format!("in state {}", s.as_str()));
        }
        if let Some(p) = &f.key_prefix {
            what.push(format!("with a key starting `{p}`"));
        }
        if let Some(e) = &f.error {
            what.push(format!("with `{e}` in their last error"));
        }
        if let Some(r) = &filter.recipient {
            what.push(format!("to {r}"));
        }
        Ok((filter, what.join(" ")))
    }

    /// The live message `id`, or an error saying where it may be instead.
    async fn live_message(&self, id: &str) -> Result<LiveMessageDetail> {
        let id_ = MessageId::from_string(id);
        if let Some(d) = self.admin.messages().show(&id_).await? {
            return Ok(d);
        }
        let dead = self
            .admin
            .dead_letters()
            .count(&crate::DeadLetterFilter::id(id))
            .await?;
        Err(Failure::Message(if dead > 0 {
            format!(
                "message {id} is not queued: it is a dead letter; {} shows it",
                self.hints.cmd(&format!("dead show {id}"))
            )
        } else {
            format!(
                "there is no queued message with id `{id}`; {} shows the ids (it may have been \
                 delivered or cancelled already)",
                self.hints.cmd("messages list")
            )
        }))
    }
}

/// The share of a group's messages that finished (delivered, dead, cancelled or suppressed), in %.
fn done_percent(g: &GroupProgress) -> u64 {
    let total = g.total();
    if total == 0 {
        return 100;
    }
    (total - g.remaining()) * 100 / total
}

/// A delivery rate, `-` when nothing was delivered lately.
fn rate_text(per_second: f64) -> String {
    if per_second > 0.0 {
        crate::units::rate(per_second)
    } else {
        "-".into()
    }
}

/// `paused: reason`, `finished` or `running`.
fn group_state(g: &GroupProgress) -> String {
    if g.is_paused() {
        format!(
            "paused: {}",
            render::one_line(g.pause_reason.as_deref().unwrap_or(""), 40)
        )
    } else if g.remaining() == 0 {
        "finished".into()
    } else {
        "running".into()
    }
}

/// `in 5m` or `3s ago`.
fn due_text(due: SystemTime, now: SystemTime) -> String {
    match due.duration_since(now) {
        Ok(ahead) if ahead.as_secs() > 0 => format!("in {}", render::duration(ahead)),
        _ => format!("{} ago", render::duration(render::age(due, now))),
    }
}

/// A group for `--json`.
fn group_json(g: &GroupProgress) -> Value {
    json!({
        "name": g.name,
        "pending": g.pending,
        "scheduled": g.scheduled,
        "running": g.running,
        "retrying": g.retrying,
        "paused": g.paused,
        "delivered": g.delivered,
        "dead": g.dead,
        "cancelled": g.cancelled,
        "suppressed": g.suppressed,
        "remaining": g.remaining(),
        "total": g.total(),
        "rate_per_second": g.rate,
        "eta_secs": g.eta().map(|d| d.as_secs()),
        "is_paused": g.is_paused(),
        "paused_at": g.paused_at.map(render::time),
        "pause_reason": g.pause_reason,
        "first_delivered_at": g.first_delivered_at.map(render::time),
        "last_delivered_at": g.last_delivered_at.map(render::time),
        "hook": g.hook,
        "completed_at": g.completed_at.map(render::time),
    })
}

/// A live message (without its payload) for `--json`.
fn live_json(m: &LiveMessage) -> Value {
    json!({
        "id": m.id.to_string(),
        "type": m.type_tag,
        "state": m.state.as_str(),
        "group": m.group,
        "attempts": m.attempts,
        "max_attempts": m.max_attempts,
        "priority": m.priority,
        "due_at": render::time(m.due_at),
        "enqueued_at": render::time(m.enqueued_at),
        "idempotency_key": m.idempotency_key,
        "last_error": m.last_error,
        "attempt_log": m.attempt_log.iter().map(|a| json!({
            "attempt": a.attempt,
            "at": render::time(a.at),
            "error": a.error,
        })).collect::<Vec<_>>(),
        "lease_owner": m.lease_owner,
        "lease_expires_at": m.lease_expires_at.map(render::time),
    })
}

/// Held order keys in `--json` output (`messages held`, `relays`).
pub(super) fn held_json(held: &[HeldKey]) -> Vec<Value> {
    held.iter()
        .map(|h| {
            json!({
                "key": h.key,
                "message": h.message_id,
                "held_by": h.held_by.as_str(),
                "last_error": h.last_error,
                "waiting": h.waiting,
            })
        })
        .collect()
}
