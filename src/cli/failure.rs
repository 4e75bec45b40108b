//! Why a command failed, told as what was wrong and what to do.

use std::borrow::Cow;

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
        let at = url.map_or(String::new(), |u| format!(" at {}", redact(u)));
        if let crate::Error::NotMigrated { table } = e {
            return format!(
                "the database{at} has no outbox tables (`{table}` is missing): run {} first",
                hints.cmd("migrate")
            );
        }
        let crate::Error::Database(db) = e else {
            return e.to_string();
        };
        match db {
            sqlx::Error::Database(d) => {
                let code = d.code().unwrap_or(Cow::Borrowed(""));
                let msg = d.message();
                if msg.contains("unable to open database file") {
                    format!(
                        "there is no SQLite database{at} ({msg}): check the path; {} creates a new one",
                        hints.cmd("migrate")
                    )
                } else if code == "3D000" || msg.contains("Unknown database") {
                    format!("the database{at} does not exist ({msg}): check the database name in the URL, or create it")
                } else if code == "28P01" || code == "28000" || msg.contains("Access denied") {
                    format!("the database{at} refused the login ({msg}): check the user and password in the URL")
                } else {
                    format!("the database{at} refused the command: {msg}")
                }
            }
            sqlx::Error::Io(io) => format!(
                "cannot reach the database{at}: {io}; check the host and port in the URL and that the server is running"
            ),
            sqlx::Error::PoolTimedOut => format!(
                "cannot reach the database{at}: no connection within the timeout; check the host and port in the URL and that the server is running"
            ),
            sqlx::Error::Configuration(c) => format!(
                "the database URL{at} is invalid: {c}; write it as sqlite://PATH, postgres://USER@HOST/DB or mysql://USER@HOST/DB"
            ),
            sqlx::Error::Tls(t) => format!(
                "the TLS connection to the database{at} failed: {t}; check the sslmode / ssl-mode in the URL"
            ),
            other => format!("database error{at}: {other}"),
        }
    }
}

/// `url` with the password of its user info, and a `password=` query parameter, replaced
/// by `***`.
pub(crate) fn redact(url: &str) -> String {
    let mut out = redact_user_info(url);
    if let Some(start) = out.find("password=").map(|i| i + "password=".len()) {
        let end = out[start..].find('&').map_or(out.len(), |i| start + i);
        out.replace_range(start..end, "***");
    }
    out
}

/// `url` with the password of its user info replaced by `***`.
fn redact_user_info(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***{}", &rest[at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact("postgres://app:s3cret@db.internal:5432/app"),
            "postgres://app:***@db.internal:5432/app"
        );
        assert_eq!(
            redact("mysql://root@127.0.0.1/test"),
            "mysql://root@127.0.0.1/test"
        );
        assert_eq!(redact("sqlite://app.db"), "sqlite://app.db");
        assert_eq!(
            redact("postgres://u@h/db?password=x@y&sslmode=require"),
            "postgres://u@h/db?password=***&sslmode=require"
        );
    }
}
