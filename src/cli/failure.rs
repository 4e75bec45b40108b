//! Why a command failed, told as what was wrong and what to do. A database that cannot be
//! opened is explained by the library's `connect` ([`crate::Error::Connect`]), the same
//! message an application's own `connect` call gets.

/// A failed command: a database error (explained with the URL and the command names when
/// printed), or a message already written for the operator.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The library or the database refused.
    Db(crate::Error),
    /// Told as is.
    Message(String),
}

impl From<crate::Error> for Failure {
    fn from(e: crate::Error) -> Self {
        Failure::Db(e)
    }
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        // Through the library's own classification, so a missing outbox table arrives as
        // `Error::NotMigrated` here too.
        Failure::Db(crate::Error::from(e))
    }
}

/// How hints name the commands: `outbox migrate` for the standalone binary, "the
/// `migrate` command" inside an application (whose binary and subcommand names the
/// library does not know).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Hints {
    /// The `outbox` binary.
    Standalone,
    /// `outbox::cli::Command` in an application's binary.
    Embedded,
}

impl Hints {
    /// The way to run `sub`, for a hint.
    pub(crate) fn cmd(self, sub: &str) -> String {
        match self {
            Hints::Standalone => format!("`outbox {sub}`"),
            Hints::Embedded => format!("the `{sub}` command"),
        }
    }
}

impl Failure {
    /// The message for the operator: what went wrong and what to do. `url` is the
    /// database URL (its password is never printed).
    pub(crate) fn explain(&self, url: Option<&str>, hints: Hints) -> String {
        let e = match self {
            Failure::Message(m) => return m.clone(),
            Failure::Db(e) => e,
        };
        let at = url.map_or(String::new(), |u| {
            format!(" at {}", crate::backend::redact_url(u))
        });
        if let crate::Error::NotMigrated { table } = e {
            return format!(
                "the database{at} has no outbox tables (`{table}` is missing): run {} first",
                hints.cmd("migrate")
            );
        }
        let crate::Error::Database(db) = e else {
            // `Error::Connect` (the library's `connect` said what to do) and the rest.
            return e.to_string();
        };
        match db {
            sqlx::Error::Database(d) => {
                format!("the database{at} refused the command: {}", d.message())
            }
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut => format!(
                "lost the database{at} during the command ({db}): check that the server is \
                 running, then run the command again"
            ),
            other => format!("database error{at}: {other}"),
        }
    }
}
