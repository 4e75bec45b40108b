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
                } else if code == "28000" && msg.contains("no encryption") {
                    // pg_hba.conf has only `hostssl` lines for this client.
                    format!("the database{at} takes only encrypted connections ({msg}): connect with sslmode=require, or verify-full with sslrootcert=PATH")
                } else if code == "28P01" || code == "28000" || msg.contains("Access denied") {
                    format!("the database{at} refused the login ({msg}): check the user and password in the URL")
                } else {
                    format!("the database{at} refused the command: {msg}")
                }
            }
            // rustls's refusal of the server's certificate (sslmode=verify-ca/verify-full,
            // ssl-mode=VERIFY_CA/VERIFY_IDENTITY) arrives as an I/O error: the server was
            // reached, so say what to check instead of the host and port.
            sqlx::Error::Io(io) if io.to_string().contains("invalid peer certificate") => format!(
                "the database server{at} sent a certificate that was not accepted ({io}): give the \
                 CA that signed it as sslrootcert=PATH (PostgreSQL) or ssl-ca=PATH (MySQL/MariaDB), \
                 and connect with the host name the certificate is for"
            ),
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
/// by `***`, however malformed the URL (a password may hold `/`, `?`, `#` or `@`).
pub(crate) fn redact(url: &str) -> String {
    scrub(url, url)
}

/// `text` with every password `url` carries replaced by `***`: for error messages, which
/// may quote the URL or parts of it (sqlx's own messages included).
pub(crate) fn scrub(text: &str, url: &str) -> String {
    let mut out = text.to_owned();
    for secret in secrets(url) {
        out = out.replace(secret, "***");
    }
    out
}

/// The passwords `url` may carry, longest first. In the user info: everything from the
/// first `:` after `scheme://` to each `@` after it, up to the LAST `@` of the URL (which
/// `@` ends a malformed URL's password cannot be known, so each candidate is hidden; a
/// password with `/`, `?`, `#` or `@` in it is covered whole); and the value of a
/// `password=` parameter (up to the next `&`).
fn secrets(url: &str) -> Vec<&str> {
    let mut found = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        let end = rest.rfind('@').unwrap_or(0);
        if let Some(colon) = rest[..end].find(':') {
            let password = &rest[colon + 1..];
            found.extend(password.match_indices('@').map(|(i, _)| &password[..i]));
        }
    }
    let mut search = url;
    while let Some(i) = search.find("password=") {
        let value = &search[i + "password=".len()..];
        let end = value.find('&').unwrap_or(value.len());
        found.push(&value[..end]);
        search = &value[end..];
    }
    found.retain(|s| !s.is_empty());
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    found
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
        // A password with `/` or `?` used to end the "authority" early and print whole.
        assert_eq!(
            redact("postgres://u:se/cret@127.0.0.1:5499/db"),
            "postgres://u:***@127.0.0.1:5499/db"
        );
        assert_eq!(redact("mysql://u:a?b#c@h/db"), "mysql://u:***@h/db");
    }

    proptest::proptest! {
        /// No password survives redaction, or the scrubbing of a message quoting the URL
        /// or any of its parts, however the URL is malformed.
        #[test]
        fn no_password_is_ever_printed(
            scheme in "(postgres|postgresql|mysql|mariadb|sqlite|pg|)",
            sep in "(://|:/|:|//|)",
            user in "[a-z]{0,6}",
            password in "PW[a-zA-Z0-9/?#@:%&=. ]{1,12}",
            host in "[a-z0-9.]{0,10}(:[0-9]{1,5})?",
            path in "(/[a-z?=&@/]{0,10})?",
            in_query in proptest::bool::ANY,
        ) {
            let url = if in_query {
                format!("{scheme}{sep}{user}@{host}{path}?sslmode=x&password={password}")
            } else {
                format!("{scheme}{sep}{user}:{password}@{host}{path}")
            };
            // A `password=` value ends at the next `&`.
            let secret = if in_query {
                password.split('&').next().unwrap_or(&password)
            } else {
                password.as_str()
            };
            // Only URLs that carry a password recognisably: `scheme://` and a user info, or
            // a `password=` parameter.
            proptest::prop_assume!(sep == "://" || in_query);
            let redacted = redact(&url);
            proptest::prop_assert!(!redacted.contains(secret), "{url} -> {redacted}");
            let message = format!("invalid port in `{url}`: `{}` after `{secret}`", &url[url.len() / 2..]);
            let scrubbed = super::scrub(&message, &url);
            proptest::prop_assert!(!scrubbed.contains(secret), "{message} -> {scrubbed}");
        }
    }
}
