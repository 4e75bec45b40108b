//! The admin commands, written once over any backend.

use std::{
    collections::BTreeMap,
    io::{BufRead, IsTerminal, Write},
    time::SystemTime,
};

use serde_json::{json, Value};

use super::{
    args::{
        AdminCommand, DeadCommand, DeadListArgs, DeadPurgeArgs, DeadRequeueArgs, PauseArgs,
        RateLimitArgs, StatusArgs,
    },
    failure::{Failure, Hints},
    render::{self, print_json},
};
use crate::{
    admin::{PausedType, Requeued},
    backend::Backend,
    store::BucketState,
    Admin, BreakerState, DeadLetter, DeadLetterFilter, RateLimit, TypeCounts,
};

/// The result of one command.
pub(crate) type Result<T> = std::result::Result<T, Failure>;

/// One admin command's surroundings: the backend, the output format, how hints name
/// commands.
pub(crate) struct Ctx<B: Backend> {
    pub(crate) backend: B,
    pub(crate) admin: Admin<B>,
    pub(crate) json: bool,
    pub(crate) hints: Hints,
}

impl<B: Backend> Ctx<B> {
    /// Runs `command`.
    pub(crate) async fn run(&self, command: &AdminCommand) -> Result<()> {
        match command {
            AdminCommand::Migrate => self.migrate().await,
            AdminCommand::Status(args) => self.status(args).await,
            AdminCommand::Dead(DeadCommand::List(args)) => self.dead_list(args).await,
            AdminCommand::Dead(DeadCommand::Show(args)) => self.dead_show(&args.id).await,
            AdminCommand::Dead(DeadCommand::Requeue(args)) => self.dead_requeue(args).await,
            AdminCommand::Dead(DeadCommand::Purge(args)) => self.dead_purge(args).await,
            AdminCommand::Pause(args) => self.pause(args).await,
            AdminCommand::Resume(args) => self.resume(&args.type_tag).await,
            AdminCommand::RateLimit(args) => self.rate_limit(args).await,
            AdminCommand::Groups => self.groups().await,
            AdminCommand::Group(command) => self.group(command).await,
            AdminCommand::Messages(command) => self.messages(command).await,
            AdminCommand::Suppressions(command) => self.suppressions(command).await,
            AdminCommand::Shaping(command) => self.shaping(command).await,
            #[cfg(feature = "webhook")]
            AdminCommand::Webhooks(command) => self.webhooks(command).await,
            #[cfg(feature = "publish")]
            AdminCommand::Relays(args) => self.relays(args).await,
        }
    }

    async fn migrate(&self) -> Result<()> {
        self.backend.migrate().await?;
        if self.json {
            print_json(&json!({ "migrated": true, "backend": self.backend.name() }));
        } else {
            println!("the outbox tables are up to date ({})", self.backend.name());
        }
        Ok(())
    }

    async fn status(&self, args: &StatusArgs) -> Result<()> {
        if !args.watch {
            return self.status_once(false).await;
        }
        let clear = !self.json && std::io::stdout().is_terminal();
        let refresh = async {
            loop {
                self.status_once(clear).await?;
                if !clear && !self.json {
                    println!();
                }
                tokio::time::sleep(args.interval).await;
            }
        };
        tokio::select! {
            r = refresh => r,
            _ = tokio::signal::ctrl_c() => Ok(()),
        }
    }

    /// One status report; `clear` clears the terminal first (a `--watch` refresh).
    async fn status_once(&self, clear: bool) -> Result<()> {
        let counts = self.admin.status_counts().await?;
        let unattended = self.admin.unattended(&counts).await?;
        let paused = self.admin.paused().await?;
        let breakers = self.admin.breakers().await?;
        let now = SystemTime::now();
        let rows = status_rows(counts, &paused);
        if self.json {
            let types: Vec<Value> = rows
                .iter()
                .map(|(c, p)| {
                    json!({
                        "type": c.type_tag,
                        "pending": c.pending,
                        "scheduled": c.scheduled,
                        "running": c.running,
                        "retrying": c.retrying,
                        "paused_messages": c.paused,
                        "done": c.done,
                        "suppressed": c.suppressed,
                        "dead": c.dead,
                        "oldest_due_age_secs": c.oldest_due.map(|t| render::age(t, now).as_secs()),
                        "paused": p.map(|p| json!({ "reason": p.reason, "since": render::time(p.paused_at) })),
                    })
                })
                .collect();
            let breakers: Vec<Value> = breakers.iter().map(breaker_json).collect();
            // One line per report, so a --watch stream is one document per line.
            let unattended = unattended.map(|u| {
                json!({
                    "due": u.due,
                    "oldest_due_age_secs": u.waiting().as_secs(),
                    "last_worker_seen": u.last_worker_seen.map(render::time),
                    "message": u.to_string(),
                })
            });
            println!(
                "{}",
                json!({
                    "at": render::time(now),
                    "types": types,
                    "breakers": breakers,
                    "unattended": unattended,
                })
            );
            return Ok(());
        }
        if clear {
            print!("\x1b[2J\x1b[H");
        }
        if rows.is_empty() {
            println!("no messages, dead letters or paused types");
            print_breakers(&breakers, now);
            return Ok(());
        }
        let mut t = render::table(
            &[
                "TYPE",
                "PENDING",
                "SCHEDULED",
                "RUNNING",
                "RETRYING",
                "PAUSED",
                "DEAD",
                "SUPPRESSED",
                "OLDEST DUE",
                "PAUSE",
            ],
            &[1, 2, 3, 4, 5, 6, 7, 8],
        );
        for (c, p) in &rows {
            t.add_row(vec![
                c.type_tag.clone(),
                c.pending.to_string(),
                c.scheduled.to_string(),
                c.running.to_string(),
                c.retrying.to_string(),
                c.paused.to_string(),
                c.dead.to_string(),
                c.suppressed.to_string(),
                c.oldest_due
                    .map_or("-".into(), |t| render::duration(render::age(t, now))),
                p.map_or("-".into(), |p| {
                    format!("yes: {}", render::one_line(&p.reason, 40))
                }),
            ]);
        }
        render::print_table(&t);
        print_breakers(&breakers, now);
        if let Some(u) = unattended {
            println!();
            println!("WARNING: {u}");
        }
        let _ = std::io::stdout().flush();
        Ok(())
    }

    async fn dead_list(&self, args: &DeadListArgs) -> Result<()> {
        let mut filter = match &args.type_tag {
            Some(t) => {
                self.known_type(t).await?;
                DeadLetterFilter::type_tag(t)
            }
            None => DeadLetterFilter::all(),
        };
        if let Some(r) = &args.recipient {
            filter = filter.to(r);
        }
        let dead = self.admin.dead_letters();
        let total = dead.count(&filter).await?;
        let list = dead.list(&filter, 0, args.limit).await?;
        if self.json {
            let items: Vec<Value> = list.iter().map(dead_letter_json).collect();
            print_json(&json!({ "total": total, "dead_letters": items }));
            return Ok(());
        }
        if list.is_empty() {
            println!("no dead letters");
            return Ok(());
        }
        let now = SystemTime::now();
        let mut t = render::table(&["ID", "TYPE", "ATTEMPTS", "FAILED", "LAST ERROR"], &[2]);
        for d in &list {
            t.add_row(vec![
                d.id.to_string(),
                d.type_tag.clone(),
                format!("{}/{}", d.attempts, d.max_attempts),
                format!("{} ago", render::duration(render::age(d.failed_at, now))),
                render::one_line(&d.last_error, 60),
            ]);
        }
        render::print_table(&t);
        if total > list.len() as u64 {
            println!(
                "showing the newest {} of {total}; --limit shows more",
                list.len()
            );
        }
        Ok(())
    }

    async fn dead_show(&self, id: &str) -> Result<()> {
        let d = self.dead_letter(id).await?;
        if self.json {
            print_json(&dead_letter_json(&d));
            return Ok(());
        }
        let now = SystemTime::now();
        println!("id:          {}", d.id);
        println!("type:        {}", d.type_tag);
        println!("attempts:    {} of {}", d.attempts, d.max_attempts);
        if let Some(key) = &d.idempotency_key {
            println!("key:         {}", render::escape_control(key, false));
        }
        if let Some(t) = d.enqueued_at {
            println!("enqueued at: {}", render::time(t));
        }
        println!(
            "failed at:   {} ({} ago)",
            render::time(d.failed_at),
            render::duration(render::age(d.failed_at, now))
        );
        println!("last error:");
        render::print_stored_lines(&d.last_error);
        render::print_attempts_and_payload(&d.attempt_log, &d.payload);
        Ok(())
    }

    async fn dead_requeue(&self, args: &DeadRequeueArgs) -> Result<()> {
        let dead = self.admin.dead_letters();
        let (filter, what) = if let Some(id) = &args.id {
            self.dead_letter(id).await?;
            (DeadLetterFilter::id(id), format!("dead letter {id}"))
        } else if let Some(t) = &args.type_tag {
            self.known_type(t).await?;
            let n = dead.count(&DeadLetterFilter::type_tag(t)).await?;
            (
                DeadLetterFilter::type_tag(t),
                format!("{n} dead letter(s) of type `{t}`"),
            )
        } else {
            let n = dead.count(&DeadLetterFilter::all()).await?;
            (DeadLetterFilter::all(), format!("{n} dead letter(s)"))
        };
        if args.id.is_none() {
            if dead.count(&filter).await? == 0 {
                return self.requeued(Requeued::default());
            }
            self.confirm(args.yes, &format!("requeue {what}"))?;
        }
        let r = dead.requeue_where(&filter).await?;
        if args.id.is_some() && r.key_taken > 0 {
            return Err(Failure::Message(format!(
                "{what} stays in the dead letters: a newer message of the same type holds its \
                 idempotency key; purge it, or requeue it after that message is delivered"
            )));
        }
        self.requeued(r)
    }

    /// Reports a requeue.
    fn requeued(&self, r: Requeued) -> Result<()> {
        if self.json {
            print_json(&json!({ "requeued": r.requeued, "key_taken": r.key_taken }));
            return Ok(());
        }
        println!("requeued {} dead letter(s)", r.requeued);
        if r.key_taken > 0 {
            println!(
                "{} stay in the dead letters: a newer message of the same type holds their \
                 idempotency key (purge them, or requeue them after that message is delivered)",
                r.key_taken
            );
        }
        Ok(())
    }

    async fn dead_purge(&self, args: &DeadPurgeArgs) -> Result<()> {
        let dead = self.admin.dead_letters();
        let purged = if let Some(id) = &args.id {
            self.dead_letter(id).await?;
            dead.purge_where(&DeadLetterFilter::id(id)).await?
        } else {
            let age = args.older_than.unwrap_or_default();
            let before = SystemTime::now().checked_sub(age).ok_or_else(|| {
                Failure::Message(format!(
                    "--older-than {} reaches before 1970; give a shorter duration",
                    render::duration(age)
                ))
            })?;
            let filter = DeadLetterFilter::all().failed_before(before);
            let n = dead.count(&filter).await?;
            if n > 0 {
                self.confirm(
                    args.yes,
                    &format!(
                        "purge {n} dead letter(s) given up more than {} ago",
                        render::duration(age)
                    ),
                )?;
            }
            if n == 0 {
                0
            } else {
                dead.purge_where(&filter).await?
            }
        };
        if self.json {
            print_json(&json!({ "purged": purged }));
        } else {
            println!("purged {purged} dead letter(s)");
        }
        Ok(())
    }

    async fn pause(&self, args: &PauseArgs) -> Result<()> {
        check_type_tag(&args.type_tag)?;
        if !self.types().await?.contains(&args.type_tag) {
            eprintln!(
                "note: no message of type `{}` is queued or dead; pausing it anyway (check the \
                 spelling with {})",
                args.type_tag,
                self.hints.cmd("status")
            );
        }
        self.admin.pause(&args.type_tag, &args.reason).await?;
        if self.json {
            print_json(&json!({ "paused": args.type_tag, "reason": args.reason }));
        } else {
            println!(
                "paused `{}`: no process starts its messages within about a second; they stay \
                 queued until {}",
                args.type_tag,
                self.hints.cmd(&format!("resume {}", args.type_tag))
            );
        }
        Ok(())
    }

    async fn resume(&self, type_tag: &str) -> Result<()> {
        check_type_tag(type_tag)?;
        if !self.admin.resume(type_tag).await? {
            let paused = self.admin.paused().await?;
            let names: Vec<&str> = paused.iter().map(|p| p.type_tag.as_str()).collect();
            return Err(Failure::Message(format!(
                "`{type_tag}` is not paused; paused types: {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )));
        }
        if self.json {
            print_json(&json!({ "resumed": type_tag }));
        } else {
            println!("resumed `{type_tag}`: its messages start again within about a second");
        }
        Ok(())
    }

    async fn rate_limit(&self, args: &RateLimitArgs) -> Result<()> {
        let Some(name) = &args.name else {
            let buckets = self.admin.rate_limits().await?;
            return self.print_buckets(&buckets);
        };
        let rate = args
            .per_second
            .or(args.per_minute.map(|n| n / 60.0))
            .or(args.per_hour.map(|n| n / 3600.0));
        let current = self.admin.rate_limit(name).await?;
        if rate.is_none() && args.burst.is_none() {
            let Some(state) = current else {
                return Err(self.unknown_bucket(name).await);
            };
            return self.print_buckets(&[(name.clone(), state)]);
        }
        let per_second = match (rate, current) {
            (Some(_), None) if !args.create => {
                let text = self.unknown_bucket_text(name, &rate_flag(args)).await?;
                return Err(Failure::Message(text));
            }
            (Some(r), _) => r,
            (None, Some(state)) => state.limit.per_second,
            (None, None) => {
                return Err(Failure::Message(format!(
                    "there is no rate bucket `{name}` to change the burst of; create it with a \
                     rate, e.g. {}",
                    self.hints
                        .cmd(&format!("rate-limit {name} --per-hour 60 --create"))
                )))
            }
        };
        let burst = args
            .burst
            .map(f64::from)
            .or(current.map(|s| s.limit.burst))
            .unwrap_or(1.0);
        self.admin
            .set_rate_limit(name, RateLimit { burst, per_second })
            .await?;
        let state = self.admin.rate_limit(name).await?.ok_or_else(|| {
            Failure::Message(format!("rate bucket `{name}` disappeared right after it was set; was it deleted by another process?"))
        })?;
        self.print_buckets(&[(name.clone(), state)])
    }

    /// Prints rate buckets with their tokens now.
    fn print_buckets(&self, buckets: &[(String, BucketState)]) -> Result<()> {
        if self.json {
            let items: Vec<Value> = buckets
                .iter()
                .map(|(name, s)| {
                    json!({
                        "name": name,
                        "per_second": s.limit.per_second,
                        "per_hour": s.limit.per_second * 3600.0,
                        "burst": s.limit.burst,
                        "tokens": s.tokens_now(),
                    })
                })
                .collect();
            print_json(&Value::Array(items));
            return Ok(());
        }
        if buckets.is_empty() {
            println!(
                "no rate buckets; create one with {}",
                self.hints.cmd("rate-limit NAME --per-hour N --create")
            );
            return Ok(());
        }
        let mut t = render::table(
            &["BUCKET", "RATE", "PER HOUR", "BURST", "TOKENS"],
            &[2, 3, 4],
        );
        for (name, s) in buckets {
            t.add_row(vec![
                name.clone(),
                crate::units::rate(s.limit.per_second),
                format!("{:.0}", s.limit.per_second * 3600.0),
                format!("{}", s.limit.burst),
                format!("{:.2}", s.tokens_now()),
            ]);
        }
        render::print_table(&t);
        Ok(())
    }

    /// The error for a bucket that does not exist, listing those that do.
    async fn unknown_bucket(&self, name: &str) -> Failure {
        match self.unknown_bucket_text(name, "--per-hour N").await {
            Ok(text) => Failure::Message(text),
            Err(e) => e,
        }
    }

    /// Says that there is no bucket `name`, which buckets there are, and how to create one
    /// (with `rate`, e.g. `--per-hour 60`).
    async fn unknown_bucket_text(&self, name: &str, rate: &str) -> Result<String> {
        let known = self
            .admin
            .rate_limits()
            .await?
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>();
        Ok(format!(
            "there is no rate bucket `{name}` (buckets: {}); check the name, or create it with {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            },
            self.hints
                .cmd(&format!("rate-limit {name} {rate} --create"))
        ))
    }

    /// The dead letter `id`, or an error saying how to find the ids.
    async fn dead_letter(&self, id: &str) -> Result<DeadLetter> {
        let found = self
            .admin
            .dead_letters()
            .list(&DeadLetterFilter::id(id), 0, 1)
            .await?;
        found.into_iter().next().ok_or_else(|| {
            Failure::Message(format!(
                "there is no dead letter with id `{id}`; {} shows the ids (it may have been \
                 requeued or purged already)",
                self.hints.cmd("dead list")
            ))
        })
    }

    /// Every type the database knows of: queued, kept, dead or paused.
    async fn types(&self) -> Result<Vec<String>> {
        let mut types: Vec<String> = self
            .admin
            .status_counts()
            .await?
            .into_iter()
            .map(|c| c.type_tag)
            .collect();
        types.extend(self.admin.paused().await?.into_iter().map(|p| p.type_tag));
        Ok(types)
    }

    /// Fails unless `type_tag` is valid and known to the database.
    pub(super) async fn known_type(&self, type_tag: &str) -> Result<()> {
        check_type_tag(type_tag)?;
        let types = self.types().await?;
        if types.iter().any(|t| t == type_tag) {
            return Ok(());
        }
        Err(Failure::Message(format!(
            "no message of type `{type_tag}` is queued or dead; known types: {} ({} lists them)",
            if types.is_empty() {
                "none".to_owned()
            } else {
                types.join(", ")
            },
            self.hints.cmd("status")
        )))
    }

    /// Asks before a destructive bulk action, unless `yes`; refuses when nobody can answer.
    pub(super) fn confirm(&self, yes: bool, action: &str) -> Result<()> {
        if yes {
            return Ok(());
        }
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Err(Failure::Message(format!(
                "refusing to {action} without confirmation: standard input is not a terminal; \
                 pass --yes to confirm"
            )));
        }
        eprint!("{action}? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        stdin
            .lock()
            .read_line(&mut answer)
            .map_err(|e| Failure::Message(format!("cannot read the answer: {e}")))?;
        if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            Ok(())
        } else {
            Err(Failure::Message("cancelled; nothing was changed".into()))
        }
    }
}

/// Fails with the reason if `type_tag` cannot be a type tag.
fn check_type_tag(type_tag: &str) -> Result<()> {
    crate::validate_type_tag(type_tag)
        .map_err(|reason| Failure::Message(format!("`{type_tag}` is not a type tag: {reason}")))
}

/// The counts of every type with its pause, paused types without messages included.
fn status_rows(
    counts: Vec<TypeCounts>,
    paused: &[PausedType],
) -> Vec<(TypeCounts, Option<&PausedType>)> {
    let mut by_type: BTreeMap<String, TypeCounts> = counts
        .into_iter()
        .map(|c| (c.type_tag.clone(), c))
        .collect();
    for p in paused {
        by_type
            .entry(p.type_tag.clone())
            .or_insert_with(|| TypeCounts {
                type_tag: p.type_tag.clone(),
                ..TypeCounts::default()
            });
    }
    by_type
        .into_values()
        .map(|c| {
            let p = paused.iter().find(|p| p.type_tag == c.type_tag);
            (c, p)
        })
        .collect()
}

/// The circuit breakers under the status table: each one that ever opened, the open ones
/// with why and when the next probe may start.
fn print_breakers(breakers: &[BreakerState], now: SystemTime) {
    if breakers.is_empty() {
        return;
    }
    println!();
    let mut t = render::table(
        &[
            "CIRCUIT BREAKER",
            "STATE",
            "FAILED PROBES",
            "NEXT PROBE",
            "REASON",
        ],
        &[2],
    );
    for b in breakers {
        let state = match (b.opened_at, b.closed_at) {
            (Some(at), _) => format!("OPEN for {}", render::duration(render::age(at, now))),
            (None, Some(at)) => format!("closed {} ago", render::duration(render::age(at, now))),
            (None, None) => "closed".into(),
        };
        let next = match (b.is_open(), b.probing, b.next_probe_in) {
            (false, ..) => "-".into(),
            (true, true, _) => "probing now".into(),
            (true, false, Some(d)) if !d.is_zero() => format!("in {}", render::duration(d)),
            (true, false, _) => "due".into(),
        };
        let reason = match b.is_open() {
            true => render::one_line(b.reason.as_deref().unwrap_or(""), 60),
            false => "-".into(),
        };
        t.add_row(vec![
            b.name.clone(),
            state,
            b.probes_failed.to_string(),
            next,
            reason,
        ]);
    }
    render::print_table(&t);
}

/// A circuit breaker for `--json`.
fn breaker_json(b: &BreakerState) -> Value {
    json!({
        "name": b.name,
        "open": b.is_open(),
        "opened_at": b.opened_at.map(render::time),
        "reason": b.reason,
        "probes_failed": b.probes_failed,
        "next_probe_in_secs": b.next_probe_in.map(|d| d.as_secs_f64()),
        "probing": b.probing,
        "closed_at": b.closed_at.map(render::time),
        "times_opened": b.times_opened,
    })
}

/// A dead letter for `--json`.
fn dead_letter_json(d: &DeadLetter) -> Value {
    json!({
        "id": d.id.to_string(),
        "type": d.type_tag,
        "attempts": d.attempts,
        "max_attempts": d.max_attempts,
        "idempotency_key": d.idempotency_key,
        "last_error": d.last_error,
        "enqueued_at": d.enqueued_at.map(render::time),
        "failed_at": render::time(d.failed_at),
        "attempt_log": d.attempt_log.iter().map(|a| json!({
            "attempt": a.attempt,
            "at": render::time(a.at),
            "error": a.error,
        })).collect::<Vec<_>>(),
        "payload": render::payload_value(&d.payload),
    })
}

/// The rate option as given (`--per-hour 60`), for a hint that repeats the command.
fn rate_flag(args: &RateLimitArgs) -> String {
    match (args.per_second, args.per_minute, args.per_hour) {
        (Some(n), _, _) => format!("--per-second {n}"),
        (_, Some(n), _) => format!("--per-minute {n}"),
        (_, _, Some(n)) => format!("--per-hour {n}"),
        _ => String::new(),
    }
}
