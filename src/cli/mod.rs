//! The operator's command line (feature `cli`), in two shapes over one implementation:
//!
//! * [`Command`], a clap subcommand an application adds to its own binary: `myapp outbox
//!   work` runs the application's handlers until SIGTERM, `myapp outbox drain` delivers
//!   what is due and exits (cron), and the admin commands work on the application's
//!   database;
//! * the standalone `outbox` binary ([`Standalone`]): the admin commands on the database
//!   at `--database-url` / `DATABASE_URL`, without any handler code.
//!
//! The admin commands ([`AdminCommand`]) are `migrate`, `status [--watch]`, `dead
//! list|show|requeue|purge`, `pause`, `resume`, `rate-limit`, `groups`, `group
//! show|pause|resume|cancel`, `messages list|show|retry|cancel`, `suppressions
//! list|add|remove|stopped`, `shaping …` and, with the `webhook` feature, `webhooks
//! list|disable|enable|rotate|retire-old-secrets|replay|replay-message|ordered`. Output
//! is a plain table, or JSON with `--json`; errors go to stderr and say what to do; bulk requeues, purges,
//! retries and cancels, and group cancels, ask for confirmation unless `--yes` (and refuse when standard input is not a terminal).

mod args;
mod exec;
mod failure;
mod live;
#[cfg(feature = "publish")]
mod relays;
mod render;
mod shaping;
mod suppressions;
#[cfg(feature = "webhook")]
mod webhooks;

use std::process::ExitCode;

#[cfg(feature = "publish")]
pub use args::RelaysArgs;
pub use args::{
    Action, AdminCommand, Command, DeadCommand, DeadListArgs, DeadPurgeArgs, DeadRequeueArgs,
    DeadShowArgs, DrainArgs, GroupCancelArgs, GroupCommand, GroupNameArgs, GroupPauseArgs,
    MessageFilterArgs, MessageShowArgs, MessagesActionArgs, MessagesCommand, MessagesHeldArgs,
    MessagesListArgs, PauseArgs, RateLimitArgs, ResumeArgs, ShapingAddRuleArgs, ShapingCommand,
    ShapingRuleNameArgs, ShapingSiteArgs, Standalone, StatusArgs, SuppressionsAddArgs,
    SuppressionsCommand, SuppressionsListArgs, SuppressionsRemoveArgs, SuppressionsStoppedArgs,
};
#[cfg(feature = "webhook")]
pub use args::{
    OnOff, WebhookDisableArgs, WebhookNameArgs, WebhookOrderedArgs, WebhookReplayArgs,
    WebhookReplayMessageArgs, WebhooksCommand,
};
/// The clap version the commands are built with (derive `Parser` / `Subcommand` with it).
pub use clap;

use exec::Ctx;
use failure::{Failure, Hints};
use serde_json::json;

use crate::{backend::Backend, Admin, DrainOptions, Outbox};

/// How a command ended; the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done (exit code 0).
    Done,
    /// The command failed; the reason was printed on stderr (exit code 1).
    Failed,
    /// `drain` ran, but some attempts failed or messages were given up (exit code 3).
    SomeAttemptsFailed,
}

impl Outcome {
    /// The exit code: 0, 1 or 3 (clap exits with 2 on invalid arguments).
    pub fn code(self) -> i32 {
        match self {
            Outcome::Done => 0,
            Outcome::Failed => 1,
            Outcome::SomeAttemptsFailed => 3,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> Self {
        ExitCode::from(o.code() as u8)
    }
}

impl Command {
    /// Runs the command on `outbox`: `work` and `drain` with its registered handlers, the
    /// admin commands on its backend. Prints the result on stdout and any error on stderr.
    pub async fn run<B: Backend, S: Send + Sync + 'static>(self, outbox: &Outbox<B, S>) -> Outcome {
        let hints = Hints::Embedded;
        let result = match &self.action {
            Action::Work => outbox
                .run()
                .await
                .map(|()| Outcome::Done)
                .map_err(Failure::from),
            Action::Drain(args) => drain(outbox, args, self.json).await,
            Action::Admin(command) => Ctx {
                backend: outbox.backend().clone(),
                admin: outbox.admin(),
                json: self.json,
                hints,
            }
            .run(command)
            .await
            .map(|()| Outcome::Done),
        };
        finish(result, None, hints)
    }
}

impl Standalone {
    /// Connects to the database at the URL and runs the admin command. Prints the result
    /// on stdout and any error on stderr.
    pub async fn run(self) -> Outcome {
        let hints = Hints::Standalone;
        let result = self.run_inner(hints).await;
        finish(result, self.database_url.as_deref(), hints)
    }

    async fn run_inner(&self, hints: Hints) -> Result<Outcome, Failure> {
        let Some(url) = self.database_url.as_deref() else {
            return Err(Failure::Message(
                "no database given: pass --database-url URL or set DATABASE_URL \
                 (sqlite://app.db, postgres://user@host/db, mysql://user@host/db)"
                    .into(),
            ));
        };
        let scheme = url.split_once(':').map_or("", |(s, _)| s);
        match scheme {
            "sqlite" => {
                #[cfg(feature = "sqlite")]
                {
                    // Only `migrate` creates a missing file: a mistyped path is an error.
                    let path = crate::sqlite::connect_options(url)?
                        .get_filename()
                        .to_path_buf();
                    if !matches!(self.command, AdminCommand::Migrate) && !path.exists() {
                        return Err(Failure::Message(format!(
                            "there is no SQLite database at {} ({} does not exist): check \
                             the path; {} creates a new one",
                            crate::backend::redact_url(url),
                            path.display(),
                            hints.cmd("migrate")
                        )));
                    }
                    let pool = crate::sqlite::connect(url).await?;
                    self.admin(crate::SqliteBackend::new(pool), hints).await
                }
                #[cfg(not(feature = "sqlite"))]
                Err(not_built("sqlite"))
            }
            "postgres" | "postgresql" => {
                #[cfg(feature = "postgres")]
                {
                    let pool = crate::postgres::connect(url).await?;
                    self.admin(crate::PostgresBackend::new(pool), hints).await
                }
                #[cfg(not(feature = "postgres"))]
                Err(not_built("postgres"))
            }
            "mysql" | "mariadb" => {
                #[cfg(feature = "mysql")]
                {
                    let pool = crate::mysql::connect(url).await?;
                    self.admin(crate::MySqlBackend::new(pool), hints).await
                }
                #[cfg(not(feature = "mysql"))]
                Err(not_built("mysql"))
            }
            _ => Err(Failure::Message(format!(
                "the database URL `{}` names no database this binary knows: write \
                 sqlite://PATH, postgres://USER@HOST/DB or mysql://USER@HOST/DB",
                crate::backend::redact_url(url)
            ))),
        }
    }

    async fn admin<B: Backend>(&self, backend: B, hints: Hints) -> Result<Outcome, Failure> {
        Ctx {
            admin: Admin::new(backend.clone()),
            backend,
            json: self.json,
            hints,
        }
        .run(&self.command)
        .await
        .map(|()| Outcome::Done)
    }
}

/// The error for a URL whose backend this binary was built without.
#[allow(dead_code)] // unused when every backend is built in
fn not_built(feature: &str) -> Failure {
    Failure::Message(format!(
        "this outbox binary was built without {feature} support: reinstall it with \
         `--features cli,{feature}`"
    ))
}

/// `drain`: delivers what is due, reports, and says in the outcome whether anything failed.
async fn drain<B: Backend, S: Send + Sync + 'static>(
    outbox: &Outbox<B, S>,
    args: &DrainArgs,
    json: bool,
) -> Result<Outcome, Failure> {
    let options = match args.while_tokens {
        true => DrainOptions::until_limited(),
        false => DrainOptions::new(),
    };
    let report = outbox.drain_with(options).await?;
    let c = &report.counts;
    if json {
        let unregistered: Vec<_> = report
            .unregistered
            .iter()
            .map(|u| json!({ "type": u.type_tag, "pending": u.pending }))
            .collect();
        render::print_json(&json!({
            "delivered": c.delivered,
            "failed_attempts": c.failed_attempts,
            "given_up": c.given_up,
            "orphaned": c.orphaned,
            "deferred": c.deferred,
            "elapsed_secs": report.elapsed.as_secs_f64(),
            "unregistered": unregistered,
        }));
    } else {
        println!(
            "drained in {:.1}s: {} delivered, {} failed attempts (retried later), {} given up, \
             {} orphaned, {} deferred",
            report.elapsed.as_secs_f64(),
            c.delivered,
            c.failed_attempts,
            c.given_up,
            c.orphaned,
            c.deferred
        );
    }
    for u in &report.unregistered {
        eprintln!(
            "warning: {} pending message(s) of type `{}`, which no handler here is registered for",
            u.pending, u.type_tag
        );
    }
    Ok(if c.failed_attempts > 0 || c.given_up > 0 {
        Outcome::SomeAttemptsFailed
    } else {
        Outcome::Done
    })
}

/// Prints a failure on stderr and turns the result into the outcome.
fn finish(result: Result<Outcome, Failure>, url: Option<&str>, hints: Hints) -> Outcome {
    match result {
        Ok(outcome) => outcome,
        Err(failure) => {
            let explained = failure.explain(url, hints);
            // Whatever the message quotes (sqlx's own text included), no password.
            let shown = match url {
                Some(url) => crate::backend::redact_password(&explained, url),
                None => explained,
            };
            eprintln!("error: {shown}");
            Outcome::Failed
        }
    }
}
