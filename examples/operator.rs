//! An application binary with the outbox's commands under `outbox` (feature `cli`):
//!
//! ```sh
//! export DATABASE_URL=sqlite://operator-demo.db
//! cargo run -p outbox-examples --example operator -- outbox migrate
//! cargo run -p outbox-examples --example operator -- signup ada@example.com
//! cargo run -p outbox-examples --example operator -- outbox status
//! cargo run -p outbox-examples --example operator -- outbox drain     # cron: exit code 3 if a mail failed
//! cargo run -p outbox-examples --example operator -- outbox work      # the daemon, until Ctrl-C
//! ```
//!
//! `outbox work` and `outbox drain` run this binary's handler; the admin commands (`status`,
//! `dead list`, `pause`, …) are the same as the standalone `outbox` binary's.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use outbox::prelude::*;
use serde::{Deserialize, Serialize};

/// The application's command line.
#[derive(Parser)]
#[command(name = "operator")]
struct Cli {
    /// The application's database.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "sqlite://operator-demo.db"
    )]
    database_url: String,
    #[command(subcommand)]
    command: AppCommand,
}

#[derive(Subcommand)]
enum AppCommand {
    /// Sign a user up: enqueues their welcome mail.
    Signup {
        /// The user's address.
        email: String,
    },
    /// Operate the outbox: workers, status, dead letters, pause, rate limits.
    Outbox(outbox::cli::Command),
}

/// The welcome mail a signup implies.
#[derive(Debug, Serialize, Deserialize, OutboxMessage)]
#[outbox(type = "operator.welcome_mail", key(email), max_attempts = 3)]
struct WelcomeMail {
    email: String,
}

/// The handler: a real application sends the mail here; addresses at `invalid` bounce.
async fn send_welcome(mail: WelcomeMail, _: MessageContext) -> Result<(), HandlerError> {
    if mail.email.ends_with("@invalid") {
        return Err(HandlerError::permanent("550 5.1.2 no such domain"));
    }
    println!("welcome mail to {}", mail.email);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let pool = outbox::sqlite::connect(&cli.database_url).await?;
    let outbox =
        Outbox::new(SqliteBackend::new(pool.clone())).register::<WelcomeMail, _>(send_welcome);
    match cli.command {
        AppCommand::Signup { email } => {
            let mut tx = pool.begin().await?;
            let _ = WelcomeMail { email }.enqueue(&mut *tx).await?;
            tx.commit().await?;
            Ok(ExitCode::SUCCESS)
        }
        AppCommand::Outbox(command) => Ok(command.run(&outbox).await.into()),
    }
}
