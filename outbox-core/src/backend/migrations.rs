//! The outbox's migrations, embedded in the library: each database's `.sql` files under
//! `migrations/<database>/`, named `VERSION_DESCRIPTION.sql` as sqlx names them, listed by
//! the build script (`build.rs`) and made into a sqlx [`Migrator`] at run time. (Not `sqlx::migrate!`: that macro needs sqlx's `macros`
//! feature, which builds sqlx and SQLite's C library a second time, for the compiler, in
//! every application's build.) Checksums are sqlx's own (SHA-384 of the file), so a database
//! migrated by either way accepts the other.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// The table the outbox records its migrations in, apart from the application's
/// `_sqlx_migrations`.
pub(crate) const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// A migrator over embedded migration files (`(file name, SQL)` in version order, as the
/// build script lists them) that records them in [`OUTBOX_MIGRATIONS_TABLE`].
pub(crate) fn migrator(files: &[(&'static str, &'static str)]) -> Migrator {
    let migrations = files
        .iter()
        .map(|&(name, sql)| {
            // The build script checked the names: VERSION_DESCRIPTION.sql.
            let (version, rest) = name.split_once('_').expect("VERSION_DESCRIPTION.sql");
            let description = rest.trim_end_matches(".sql").replace('_', " ");
            Migration::new(
                version.parse().expect("a numeric migration version"),
                Cow::Owned(description),
                MigrationType::Simple,
                sqlx::SqlStr::from_static(sql),
                sql.starts_with("-- no-transaction"),
            )
        })
        .collect();
    let mut migrator = Migrator::with_migrations(migrations);
    migrator.dangerous_set_table_name(OUTBOX_MIGRATIONS_TABLE);
    migrator
}
