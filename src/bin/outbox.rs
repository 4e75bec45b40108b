//! The standalone `outbox` command (feature `cli`): the admin commands on the database at
//! `--database-url` or `DATABASE_URL`. Run `outbox --help` for the commands.

use std::process::ExitCode;

use outbox::cli::{clap::Parser, Standalone};

#[tokio::main]
async fn main() -> ExitCode {
    Standalone::parse().run().await.into()
}
