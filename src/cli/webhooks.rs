//! `webhooks …`: the outgoing webhook endpoints from the command line (feature `webhook`):
//! list, disable and enable, rotate and retire secrets, replay delivered events, order.

use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::{
    args::{OnOff, WebhookOrderedArgs, WebhookReplayArgs, WebhooksCommand},
    exec::{Ctx, Result},
    failure::Failure,
    render::{self, escape_control, one_line, print_json},
};
use crate::{
    backend::Backend,
    store::Endpoint,
    webhook::{
        message::group_of, signature::Algorithm, WebhookEndpoint, WebhookEndpoints, KIND,
        WEBHOOK_TYPE,
    },
    DeadLetterFilter, MessageId,
};

impl<B: Backend> Ctx<B> {
    /// `webhooks …`.
    pub(super) async fn webhooks(&self, command: &WebhooksCommand) -> Result<()> {
        let endpoints = WebhookEndpoints::new(&self.admin);
        match command {
            WebhooksCommand::List => self.webhooks_list().await,
            WebhooksCommand::Disable(args) => {
                if !endpoints.disable(&args.name, &args.reason).await? {
                    return Err(self.no_endpoint(&args.name));
                }
                let group = group_of(&args.name);
                if self.json {
                    print_json(&json!({
                        "disabled": args.name, "reason": args.reason, "group": group,
                    }));
                } else {
                    println!(
                        "disabled webhook endpoint `{}`: its messages, queued and new, wait in \
                         group `{group}` (not dead letters) until {}",
                        args.name,
                        self.hints.cmd(&format!("webhooks enable {}", args.name))
                    );
                }
                Ok(())
            }
            WebhooksCommand::Enable(args) => {
                let Some(before) = self.stored(&args.name).await? else {
                    return Err(self.no_endpoint(&args.name));
                };
                if !endpoints.enable(&args.name).await? {
                    return Err(self.no_endpoint(&args.name));
                }
                let was_disabled = !before.is_enabled();
                if self.json {
                    print_json(&json!({
                        "enabled": args.name, "was_disabled": was_disabled,
                        "group": group_of(&args.name),
                    }));
                } else if was_disabled {
                    println!(
                        "enabled webhook endpoint `{}`: its parked messages go out (group `{}` \
                         resumed), and its failure clock starts over",
                        args.name,
                        group_of(&args.name)
                    );
                } else {
                    println!(
                        "webhook endpoint `{}` was not disabled; its group `{}` is resumed and \
                         its failure clock starts over",
                        args.name,
                        group_of(&args.name)
                    );
                }
                Ok(())
            }
            WebhooksCommand::Rotate(args) => {
                if self.stored(&args.name).await?.is_none() {
                    return Err(self.no_endpoint(&args.name));
                }
                let new = endpoints.rotate(&args.name).await?;
                let secrets = endpoints
                    .get(&args.name)
                    .await?
                    .map_or(1, |e| e.secrets.len());
                let algorithm = algorithm_name(new.algorithm);
                if self.json {
                    print_json(&json!({
                        "endpoint": args.name,
                        "algorithm": algorithm,
                        "verify_with": new.verify_with,
                        "secrets": secrets,
                    }));
                } else {
                    println!(
                        "rotated the signing secret of webhook endpoint `{}` ({algorithm}): \
                         every delivery is now signed by its {secrets} key(s).",
                        args.name
                    );
                    println!("the receiver verifies with (shown once, keep it now):");
                    println!("  {}", new.verify_with);
                    println!(
                        "once the receiver uses it, run {}",
                        self.hints
                            .cmd(&format!("webhooks retire-old-secrets {}", args.name))
                    );
                }
                Ok(())
            }
            WebhooksCommand::RetireOldSecrets(args) => {
                if self.stored(&args.name).await?.is_none() {
                    return Err(self.no_endpoint(&args.name));
                }
                let retired = endpoints.retire_old_secrets(&args.name).await?;
                if self.json {
                    print_json(&json!({ "endpoint": args.name, "retired": retired }));
                } else if retired == 0 {
                    println!(
                        "webhook endpoint `{}` has no old secret: nothing retired",
                        args.name
                    );
                } else {
                    println!(
                        "retired {retired} old secret(s) of webhook endpoint `{}`: deliveries \
                         are signed by its newest key alone",
                        args.name
                    );
                }
                Ok(())
            }
            WebhooksCommand::Replay(args) => self.webhooks_replay(args).await,
            WebhooksCommand::ReplayMessage(args) => self.webhooks_replay_message(&args.id).await,
            WebhooksCommand::Ordered(args) => self.webhooks_ordered(args).await,
        }
    }

    /// `webhooks replay NAME [--since D] [--until D]`.
    async fn webhooks_replay(&self, args: &WebhookReplayArgs) -> Result<()> {
        if self.stored(&args.name).await?.is_none() {
            return Err(self.no_endpoint(&args.name));
        }
        if let (Some(since), Some(until)) = (args.since, args.until) {
            if since <= until {
                return Err(Failure::Message(format!(
                    "--since {} does not reach further back than --until {}: no event was                      delivered in between; --since is the older bound (e.g. --since 2h                      --until 1h)",
                    render::duration(since),
                    render::duration(until)
                )));
            }
        }
        let now = SystemTime::now();
        let ago = |d: Duration, flag: &str| {
            now.checked_sub(d).ok_or_else(|| {
                Failure::Message(format!(
                    "--{flag} {} reaches before 1970; give a shorter duration",
                    render::duration(d)
                ))
            })
        };
        let after = args.since.map(|d| ago(d, "since")).transpose()?;
        let before = args.until.map(|d| ago(d, "until")).transpose()?;
        let replayed = WebhookEndpoints::new(&self.admin)
            .replay(&args.name, after, before)
            .await?;
        let group = group_of(&args.name);
        if self.json {
            print_json(&json!({
                "endpoint": args.name,
                "replayed": replayed,
                "delivered_after": after.map(render::time),
                "delivered_before": before.map(render::time),
                "group": group,
            }));
            return Ok(());
        }
        // "delivered event(s)", or "event(s) … delivered in the last 2h".
        let (what, range) = match (args.since, args.until) {
            (None, None) => ("delivered event", String::new()),
            (Some(s), None) => (
                "event",
                format!(" delivered in the last {}", render::duration(s)),
            ),
            (None, Some(u)) => (
                "event",
                format!(" delivered more than {} ago", render::duration(u)),
            ),
            (Some(s), Some(u)) => (
                "event",
                format!(
                    " delivered between {} and {} ago",
                    render::duration(s),
                    render::duration(u)
                ),
            ),
        };
        if replayed == 0 {
            println!(
                "no {what} of webhook endpoint `{}`{range} was queued again: only delivered \
                 events kept for the retention window can be replayed (the application keeps \
                 them with Retention::keep_for; by default a delivered event is deleted)",
                args.name
            );
        } else {
            println!(
                "queued again {replayed} {what}(s) of webhook endpoint `{}`{range}: they go \
                 out with their webhook-id (receivers that deduplicate skip them); {} shows \
                 them",
                args.name,
                self.hints.cmd(&format!("messages list --group {group}"))
            );
        }
        Ok(())
    }

    /// `webhooks replay-message ID`: a kept delivered event is queued again, a dead letter
    /// requeued; anything else is an error saying what the id is.
    async fn webhooks_replay_message(&self, id: &str) -> Result<()> {
        let dead = self
            .admin
            .dead_letters()
            .list(&DeadLetterFilter::id(id), 0, 1)
            .await?
            .into_iter()
            .next();
        if let Some(d) = &dead {
            if d.type_tag != WEBHOOK_TYPE {
                return Err(Failure::Message(format!(
                    "dead letter `{id}` is a `{}`, not a webhook event; {} requeues it",
                    d.type_tag,
                    self.hints.cmd(&format!("dead requeue {id}"))
                )));
            }
        }
        let message_id = MessageId::from_string(id);
        let done = WebhookEndpoints::new(&self.admin)
            .replay_message(&message_id)
            .await?;
        if !done {
            return Err(self.not_replayed(id, dead.is_some()).await?);
        }
        let endpoint = match &dead {
            Some(d) => endpoint_of(&d.payload),
            None => self
                .admin
                .messages()
                .show(&message_id)
                .await?
                .and_then(|m| endpoint_of(&m.payload)),
        };
        let was = if dead.is_some() {
            "dead_letter"
        } else {
            "delivered"
        };
        if self.json {
            print_json(&json!({
                "id": id,
                "replayed": true,
                "was": was,
                "endpoint": endpoint,
            }));
            return Ok(());
        }
        let of = endpoint.map_or(String::new(), |e| {
            format!(" (endpoint `{}`)", escape_control(&e, false))
        });
        if dead.is_some() {
            println!(
                "requeued dead letter {id}{of}: the webhook event goes out again, due now \
                 with its attempts reset"
            );
        } else {
            println!(
                "queued delivered webhook event {id}{of} again (it was kept for the retention \
                 window): it goes out with the same webhook-id"
            );
        }
        Ok(())
    }

    /// Why `replay-message ID` did nothing.
    async fn not_replayed(&self, id: &str, dead: bool) -> Result<Failure> {
        if dead {
            return Ok(Failure::Message(format!(
                "dead letter {id} stays in the dead letters: a newer message of the same type \
                 holds its idempotency key; purge it, or requeue it after that message is \
                 delivered"
            )));
        }
        if let Some(m) = self
            .admin
            .messages()
            .show(&MessageId::from_string(id))
            .await?
        {
            return Ok(Failure::Message(format!(
                "message {id} is still queued ({}): it goes out on its own; {} makes it due now",
                m.message.state.as_str(),
                self.hints.cmd(&format!("messages retry {id}"))
            )));
        }
        Ok(Failure::Message(format!(
            "found neither a delivered webhook event kept for the retention window nor a \
             dead letter with id `{}`: only events kept with Retention::keep_for can be \
             replayed, and {} shows the dead letters",
            escape_control(id, false),
            self.hints.cmd("dead list --type outbox.webhook")
        )))
    }

    /// `webhooks ordered NAME on|off`.
    async fn webhooks_ordered(&self, args: &WebhookOrderedArgs) -> Result<()> {
        let Some(stored) = self.stored(&args.name).await? else {
            return Err(self.no_endpoint(&args.name));
        };
        let was = WebhookEndpoint::from_stored(&stored)
            .ok()
            .map(|w| w.ordered);
        let ordered = args.setting == OnOff::On;
        WebhookEndpoints::new(&self.admin)
            .set_ordered(&args.name, ordered)
            .await?;
        if self.json {
            print_json(&json!({
                "endpoint": args.name,
                "ordered": ordered,
                "was_ordered": was,
            }));
        } else if ordered {
            println!(
                "webhook endpoint `{}` is ordered: its events enqueued from now on are \
                 delivered one at a time, in enqueue order, in every process (a failing one \
                 holds the next until it is delivered, or its dead letter is requeued or \
                 purged); events queued before keep going as they were enqueued",
                args.name
            );
        } else {
            println!(
                "webhook endpoint `{}` is not ordered: its events enqueued from now on go out \
                 as fast as its host's limits allow; events queued in order before stay in \
                 order",
                args.name
            );
        }
        Ok(())
    }

    /// `webhooks list`: one row per stored endpoint; one whose settings do not read is
    /// listed with the reason instead of failing the whole list.
    async fn webhooks_list(&self) -> Result<()> {
        let stored = self.admin.endpoints(KIND).list().await?;
        let rows: Vec<(Endpoint, std::result::Result<WebhookEndpoint, String>)> = stored
            .into_iter()
            .map(|e| {
                let read = WebhookEndpoint::from_stored(&e);
                (e, read)
            })
            .collect();
        if self.json {
            let items: Vec<Value> = rows
                .iter()
                .map(|(e, read)| endpoint_json(e, read))
                .collect();
            print_json(&json!({ "endpoints": items }));
            return Ok(());
        }
        if rows.is_empty() {
            println!(
                "no webhook endpoints (the application creates them: WebhookEndpoints::create)"
            );
            return Ok(());
        }
        let mut t = render::table(
            &[
                "NAME",
                "URL",
                "STATE",
                "FAILING SINCE",
                "SECRETS",
                "ORDERED",
            ],
            &[4],
        );
        for (e, read) in &rows {
            let (url, secrets, ordered) = match read {
                Ok(w) => (
                    w.url.to_string(),
                    w.secrets.len().to_string(),
                    if w.ordered { "yes" } else { "no" }.to_owned(),
                ),
                Err(why) => (format!("unreadable: {why}"), "?".into(), "?".into()),
            };
            t.add_row(vec![
                shown(&e.name, 40),
                shown(&url, 70),
                shown(&state(e), 80),
                e.failing_since.map_or("-".into(), render::time),
                secrets,
                ordered,
            ]);
        }
        render::print_table(&t);
        Ok(())
    }

    /// Endpoint `name` as stored, if it is.
    async fn stored(&self, name: &str) -> Result<Option<Endpoint>> {
        Ok(self.admin.endpoints(KIND).get(name).await?)
    }

    /// The error for an endpoint that is not stored.
    fn no_endpoint(&self, name: &str) -> Failure {
        Failure::Message(format!(
            "there is no webhook endpoint `{}`; {} lists them",
            escape_control(name, false),
            self.hints.cmd("webhooks list")
        ))
    }
}

/// `enabled`, or `disabled since TIME: REASON`.
fn state(e: &Endpoint) -> String {
    match e.disabled_at {
        None => "enabled".into(),
        Some(at) => format!(
            "disabled since {}: {}",
            render::time(at),
            e.disabled_reason.as_deref().unwrap_or("")
        ),
    }
}

/// Stored text on one line, its control characters escaped (a disable reason can quote a
/// receiver's answer), cut to `max` characters.
fn shown(text: &str, max: usize) -> String {
    one_line(&escape_control(text, false), max)
}

fn algorithm_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::HmacSha256 => "HMAC-SHA256",
        Algorithm::Ed25519 => "Ed25519",
    }
}

fn endpoint_json(e: &Endpoint, read: &std::result::Result<WebhookEndpoint, String>) -> Value {
    json!({
        "name": e.name,
        "url": read.as_ref().ok().map(|w| w.url.to_string()),
        "enabled": e.is_enabled(),
        "disabled_at": e.disabled_at.map(render::time),
        "disabled_reason": e.disabled_reason,
        "failing_since": e.failing_since.map(render::time),
        "secrets": read.as_ref().ok().map(|w| w.secrets.len()),
        "ordered": read.as_ref().ok().map(|w| w.ordered),
        "error": read.as_ref().err(),
        "group": group_of(&e.name),
    })
}

/// The endpoint a stored webhook payload is for.
fn endpoint_of(payload: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(payload).ok()?;
    v["endpoint"].as_str().map(str::to_owned)
}
