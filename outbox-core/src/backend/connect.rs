//! Opening a database, and saying what to do when that fails: one explanation for every
//! `connect` of the library and for the operator's command line.
//!
//! Each `connect` refuses a URL written for another database (naming the function that
//! takes it), opens one connection first so a refused or unreachable server fails at once
//! with its own reason (a pool would retry a refused connection until its timeout and then
//! only say "pool timed out"), and turns the driver's error into [`Error::Connect`]: what
//! was wrong and what to do, the URL's password never shown.

use std::time::Duration;

use crate::error::Error;

/// Connections the pools that `connect` opens keep open even when idle: a worker that
/// starts claims, beats and probes at once, and a connection opened then (a TLS handshake
/// and a login, tens of milliseconds) would delay its first delivery.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) const WARM_CONNECTIONS: u32 = 4;

/// How long a `connect` waits for a server that does not answer at all.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The database a `connect` function opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    /// `outbox::sqlite`.
    #[cfg_attr(not(feature = "sqlite"), allow(dead_code))]
    Sqlite,
    /// `outbox::postgres`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
    /// `outbox::mysql`.
    #[cfg_attr(not(feature = "mysql"), allow(dead_code))]
    MySql,
}

impl Engine {
    /// The database a URL scheme names, if any.
    fn of_scheme(scheme: &str) -> Option<Engine> {
        match scheme.to_ascii_lowercase().as_str() {
            "sqlite" => Some(Engine::Sqlite),
            "postgres" | "postgresql" => Some(Engine::Postgres),
            "mysql" | "mariadb" => Some(Engine::MySql),
            _ => None,
        }
    }

    /// Its name for people.
    fn name(self) -> &'static str {
        match self {
            Engine::Sqlite => "SQLite",
            Engine::Postgres => "PostgreSQL",
            Engine::MySql => "MariaDB/MySQL",
        }
    }

    /// Its module in the library, which is also its cargo feature.
    fn module(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite",
            Engine::Postgres => "postgres",
            Engine::MySql => "mysql",
        }
    }

    /// Its backend type.
    fn backend(self) -> &'static str {
        match self {
            Engine::Sqlite => "SqliteBackend",
            Engine::Postgres => "PostgresBackend",
            Engine::MySql => "MySqlBackend",
        }
    }

    /// How its URLs are written.
    fn url_form(self) -> &'static str {
        match self {
            Engine::Sqlite => "sqlite://PATH",
            Engine::Postgres => "postgres://USER:PASSWORD@HOST:PORT/DATABASE",
            Engine::MySql => "mysql://USER:PASSWORD@HOST:PORT/DATABASE",
        }
    }
}

/// A connect failure with `message` (already free of the URL's password).
fn refused(message: String, source: Option<sqlx::Error>) -> Error {
    Error::Connect { message, source }
}

/// Refuses a URL that `engine`'s `connect` cannot open: one written for another database
/// (naming the function that opens it), or, for a server database, one of no known
/// database. A SQLite URL may also be a bare path.
pub(crate) fn check_scheme(engine: Engine, url: &str) -> Result<(), Error> {
    let scheme = url
        .split_once("://")
        .or_else(|| url.split_once(':'))
        .map(|(s, _)| s)
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
    let shown = redact_url(url);
    let this = format!("`outbox::{}::connect`", engine.module());
    match scheme.map(|s| (s, Engine::of_scheme(s))) {
        Some((_, Some(e))) if e == engine => Ok(()),
        Some((_, Some(other))) => Err(refused(
            format!(
                "`{shown}` is a {} URL, but {this} opens {}: call `outbox::{}::connect` \
                 with it (feature `{}` of outbox) and use `{}`, or give {this} a URL such as {}",
                other.name(),
                engine.name(),
                other.module(),
                other.module(),
                other.backend(),
                engine.url_form()
            ),
            None,
        )),
        // A bare SQLite path (`app.db`, `/var/lib/app.db`, `C:\app.db`) has no `://`.
        _ if engine == Engine::Sqlite && !url.contains("://") => Ok(()),
        _ => Err(refused(
            format!(
                "the database URL `{shown}` is not a {} URL: {this} takes {}",
                engine.name(),
                engine.url_form()
            ),
            None,
        )),
    }
}

/// The error for a connection to `url` (a database of kind `engine`) that failed with `e`:
/// what was wrong and what to do, without the URL's password.
pub(crate) fn connect_error(engine: Engine, url: &str, e: sqlx::Error) -> Error {
    let message = redact_password(&explain(engine, url, &e), url);
    refused(message, Some(e))
}

/// The error for a server that gave no answer within [`CONNECT_TIMEOUT`].
#[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
pub(crate) fn no_answer(url: &str) -> Error {
    refused(
        format!(
            "cannot reach the database at {}: no answer within {} s; check the host and \
             port in the URL, that the server is running, and that no firewall drops the \
             connection",
            redact_url(url),
            CONNECT_TIMEOUT.as_secs()
        ),
        None,
    )
}

/// Opens and closes one connection to a server with `options`: a server that refuses the
/// connection, the login or the database name fails here at once with its own reason (a
/// pool retries a refused connection until its timeout and loses the reason); one that
/// does not answer fails after [`CONNECT_TIMEOUT`].
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn probe<C: sqlx::Connection>(
    engine: Engine,
    url: &str,
    options: &<C as sqlx::Connection>::Options,
) -> Result<(), Error> {
    match tokio::time::timeout(CONNECT_TIMEOUT, C::connect_with(options)).await {
        Ok(Ok(conn)) => {
            // Closing politely is a courtesy; a failure here says nothing about the pool.
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(connect_error(engine, url, e)),
        Err(_) => Err(no_answer(url)),
    }
}

/// What went wrong opening `url` and what to do, by what the driver said.
fn explain(engine: Engine, url: &str, e: &sqlx::Error) -> String {
    let at = format!(" at {}", redact_url(url));
    match e {
        sqlx::Error::Database(d) => {
            let code = d.code().unwrap_or_default();
            let msg = d.message();
            if engine == Engine::Sqlite
                && (msg.contains("unable to open database file") || code == "14")
            {
                format!(
                    "cannot open the SQLite database{at} ({msg}): check the path in the URL; \
                     its directory must exist and be writable (the file itself is created)"
                )
            } else if code == "3D000" || msg.contains("Unknown database") {
                format!(
                    "the database{at} does not exist ({msg}): check the database name in the \
                     URL, or create it (CREATE DATABASE …)"
                )
            } else if code == "28000" && msg.contains("no encryption") {
                // pg_hba.conf has only `hostssl` lines for this client.
                format!(
                    "the database{at} takes only encrypted connections ({msg}): connect with \
                     sslmode=require, or verify-full with sslrootcert=PATH"
                )
            } else if code == "28P01" || code == "28000" || msg.contains("Access denied") {
                format!(
                    "the database{at} refused the login ({msg}): check the user and password \
                     in the URL"
                )
            } else {
                format!("the database{at} refused the connection: {msg}")
            }
        }
        // rustls's refusal of the server's certificate (sslmode=verify-ca/verify-full,
        // ssl-mode=VERIFY_CA/VERIFY_IDENTITY) arrives as an I/O error: the server was
        // reached, so say what to check instead of the host and port.
        sqlx::Error::Io(io) if io.to_string().contains("invalid peer certificate") => format!(
            "the database server{at} sent a certificate that was not accepted ({io}): give the \
             CA that signed it as sslrootcert=PATH (PostgreSQL) or ssl-ca=PATH \
             (MySQL/MariaDB), and connect with the host name the certificate is for"
        ),
        sqlx::Error::Io(io) => format!(
            "cannot reach the database{at}: {io}; check the host and port in the URL and that \
             the server is running"
        ),
        sqlx::Error::PoolTimedOut => format!(
            "cannot reach the database{at}: no connection within the timeout; check the host \
             and port in the URL and that the server is running"
        ),
        sqlx::Error::Configuration(c) => format!(
            "the database URL{at} is invalid: {c}; write it as {}",
            engine.url_form()
        ),
        sqlx::Error::Tls(t) => format!(
            "the TLS connection to the database{at} failed: {t}; check the sslmode / \
             ssl-mode in the URL"
        ),
        other => format!("cannot connect to the database{at}: {other}"),
    }
}

/// `url` with the password of its user info, and a `password=` query parameter, replaced
/// by `***`, however malformed the URL (a password may hold `/`, `?`, `#` or `@`): for
/// logs and error messages.
pub fn redact_url(url: &str) -> String {
    redact_password(url, url)
}

/// `text` with every password `url` carries replaced by `***`: for error messages that
/// may quote the URL or parts of it (the database driver's own messages included).
pub fn redact_password(text: &str, url: &str) -> String {
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
    use super::{check_scheme, redact_url, Engine};

    #[test]
    fn redact_hides_only_the_password() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db.internal:5432/app"),
            "postgres://app:***@db.internal:5432/app"
        );
        assert_eq!(
            redact_url("mysql://root@127.0.0.1/test"),
            "mysql://root@127.0.0.1/test"
        );
        assert_eq!(redact_url("sqlite://app.db"), "sqlite://app.db");
        assert_eq!(
            redact_url("postgres://u@h/db?password=x@y&sslmode=require"),
            "postgres://u@h/db?password=***&sslmode=require"
        );
        // A password with `/` or `?` used to end the "authority" early and print whole.
        assert_eq!(
            redact_url("postgres://u:se/cret@127.0.0.1:5499/db"),
            "postgres://u:***@127.0.0.1:5499/db"
        );
        assert_eq!(redact_url("mysql://u:a?b#c@h/db"), "mysql://u:***@h/db");
    }

    #[test]
    fn a_url_for_another_database_names_the_function_that_opens_it() {
        let e = check_scheme(Engine::Sqlite, "postgres://app:pw@127.0.0.1/app").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("is a PostgreSQL URL, but `outbox::sqlite::connect` opens SQLite")
                && text.contains("call `outbox::postgres::connect`")
                && text.contains("feature `postgres`")
                && !text.contains(":pw@"),
            "{text}"
        );
        let e = check_scheme(Engine::Postgres, "mariadb://root@127.0.0.1/test").unwrap_err();
        assert!(
            e.to_string().contains("call `outbox::mysql::connect`"),
            "{e}"
        );
        let e = check_scheme(Engine::MySql, "redis://127.0.0.1/0").unwrap_err();
        assert!(e.to_string().contains("is not a MariaDB/MySQL URL"), "{e}");
        for ok in [
            "sqlite://app.db",
            "sqlite::memory:",
            "app.db",
            "/tmp/app.db",
        ] {
            check_scheme(Engine::Sqlite, ok).unwrap();
        }
        check_scheme(Engine::Postgres, "postgresql://u@h/db").unwrap();
        check_scheme(Engine::MySql, "mariadb://u@h/db").unwrap();
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
            let redacted = redact_url(&url);
            proptest::prop_assert!(!redacted.contains(secret), "{url} -> {redacted}");
            let message = format!("invalid port in `{url}`: `{}` after `{secret}`", &url[url.len() / 2..]);
            let scrubbed = super::redact_password(&message, &url);
            proptest::prop_assert!(!scrubbed.contains(secret), "{message} -> {scrubbed}");
            for engine in [Engine::Sqlite, Engine::Postgres, Engine::MySql] {
                if let Err(e) = check_scheme(engine, &url) {
                    proptest::prop_assert!(!e.to_string().contains(secret), "{url} -> {e}");
                }
            }
        }
    }
}
