//! A database error that another connection layer (sqlx 0.8, SeaORM, diesel) reported,
//! carried as a sqlx 0.9 database error so the enqueue classifies it as its own: what the
//! bridges in `backend::bridge` return, and what `error` recognises.

use std::borrow::Cow;

/// A database error reported by another connection layer, carried as a sqlx 0.9 database
/// error: its SQLSTATE (or, where the layer hides it, the one its message names) and its
/// message, so the enqueue tells a lost transaction, a lock timeout or a missing migration
/// apart as it does on the sqlx 0.9 path.
#[derive(Debug)]
pub(crate) struct ForeignDatabaseError {
    /// "postgres", "mysql" or "sqlite".
    pub(crate) engine: &'static str,
    code: Option<String>,
    message: String,
    kind: sqlx::error::ErrorKind,
}

impl ForeignDatabaseError {
    /// A database error of `engine`; without a `code`, the code its message names.
    pub(crate) fn new(
        engine: &'static str,
        code: Option<String>,
        message: String,
        kind: sqlx::error::ErrorKind,
    ) -> Self {
        let code = code.or_else(|| code_of_message(engine, &message).map(str::to_owned));
        ForeignDatabaseError {
            engine,
            code,
            message,
            kind,
        }
    }

    /// As a sqlx 0.9 error.
    pub(crate) fn into_sqlx(self) -> sqlx::Error {
        sqlx::Error::Database(Box::new(self))
    }
}

/// The SQLSTATE a database message stands for, for layers that report the message alone
/// (diesel): deadlocks, lock timeouts and a missing table.
fn code_of_message(engine: &str, message: &str) -> Option<&'static str> {
    match engine {
        "postgres" if message.contains("deadlock detected") => Some("40P01"),
        "postgres" if message.contains("could not serialize access") => Some("40001"),
        "postgres" if message.contains("lock timeout") => Some("55P03"),
        "postgres" if message.starts_with("relation ") && message.ends_with("does not exist") => {
            Some("42P01")
        }
        "mysql" if message.contains("Deadlock found") => Some("40001"),
        "mysql" if message.contains("Lock wait timeout") => Some("HY000"),
        "mysql" if message.starts_with("Table ") && message.ends_with("doesn't exist") => {
            Some("42S02")
        }
        _ => None,
    }
}

impl std::fmt::Display for ForeignDatabaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{} (SQLSTATE {code})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ForeignDatabaseError {}

impl sqlx::error::DatabaseError for ForeignDatabaseError {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        self.code.as_deref().map(Cow::Borrowed)
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        match &self.kind {
            sqlx::error::ErrorKind::UniqueViolation => sqlx::error::ErrorKind::UniqueViolation,
            sqlx::error::ErrorKind::ForeignKeyViolation => {
                sqlx::error::ErrorKind::ForeignKeyViolation
            }
            sqlx::error::ErrorKind::NotNullViolation => sqlx::error::ErrorKind::NotNullViolation,
            sqlx::error::ErrorKind::CheckViolation => sqlx::error::ErrorKind::CheckViolation,
            sqlx::error::ErrorKind::ExclusionViolation => {
                sqlx::error::ErrorKind::ExclusionViolation
            }
            _ => sqlx::error::ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::code_of_message;

    #[test]
    fn messages_name_the_code_layers_hide() {
        assert_eq!(
            code_of_message("postgres", "deadlock detected"),
            Some("40P01")
        );
        assert_eq!(
            code_of_message("postgres", r#"relation "outbox_messages" does not exist"#),
            Some("42P01")
        );
        assert_eq!(
            code_of_message(
                "mysql",
                "Lock wait timeout exceeded; try restarting transaction"
            ),
            Some("HY000")
        );
        assert_eq!(
            code_of_message("mysql", "Table 'test.outbox_messages' doesn't exist"),
            Some("42S02")
        );
        assert_eq!(
            code_of_message("sqlite", "no such table: outbox_messages"),
            None
        );
    }
}
