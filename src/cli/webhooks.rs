//! `webhooks …`: the outgoing webhook endpoints from the command line (feature `webhook`).

use serde_json::{json, Value};

use super::{
    args::WebhooksCommand,
    exec::{Ctx, Result},
    failure::Failure,
    render::{self, escape_control, one_line, print_json},
};
use crate::{
    backend::Backend,
    store::Endpoint,
    webhook::{message::group_of, signature::Algorithm, WebhookEndpoint, WebhookEndpoints, KIND},
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
        }
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
        let mut t = render::table(&["NAME", "URL", "STATE", "FAILING SINCE", "SECRETS"], &[4]);
        for (e, read) in &rows {
            let (url, secrets) = match read {
                Ok(w) => (w.url.to_string(), w.secrets.len().to_string()),
                Err(why) => (format!("unreadable: {why}"), "?".into()),
            };
            t.add_row(vec![
                shown(&e.name, 40),
                shown(&url, 70),
                shown(&state(e), 80),
                e.failing_since.map_or("-".into(), render::time),
                secrets,
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
        "error": read.as_ref().err(),
        "group": group_of(&e.name),
    })
}
