//! The outbox's migrations, embedded in the library: each database's `.sql` files under
//! `migrations/<database>/`, named `VERSION_DESCRIPTION.sql` as sqlx names them, made into a
//! sqlx [`Migrator`] at run time. (Not `sqlx::migrate!`: that macro needs sqlx's `macros`
//! feature, which builds sqlx and SQLite's C library a second time, for the compiler, in
//! every application's build.) Checksums are sqlx's own (SHA-384 of the file), so a database
//! migrated by either way accepts the other.

use std::borrow::Cow;

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// The table the outbox records its migrations in, apart from the application's
/// `_sqlx_migrations`.
pub(crate) const OUTBOX_MIGRATIONS_TABLE: &str = "_outbox_migrations";

/// `(file name, SQL)` of each migration file of `migrations/$db/`, in order; a unit test
/// checks the list against the directory.
macro_rules! embed {
    ($db:literal; $($file:literal),* $(,)?) => {
        &[$((
            $file,
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $db, "/", $file)),
        )),*]
    };
}
pub(crate) use embed;

/// A migrator over embedded migration files (see [`embed!`]) that records them in
/// [`OUTBOX_MIGRATIONS_TABLE`].
pub(crate) fn migrator(files: &[(&'static str, &'static str)]) -> Migrator {
    let migrations = files
        .iter()
        .map(|&(name, sql)| {
            // The file names are checked by the unit test below.
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

#[cfg(test)]
mod tests {
    /// The embedded list of each database is every file of its directory, in order, and
    /// each name parses.
    #[test]
    fn every_migration_file_is_embedded() {
        #[allow(unused_mut)]
        let mut lists: Vec<(&str, &[(&str, &str)])> = Vec::new();
        #[cfg(feature = "sqlite")]
        lists.push(("sqlite", crate::backend::sqlite::MIGRATIONS));
        #[cfg(feature = "postgres")]
        lists.push(("postgres", crate::backend::postgres::MIGRATIONS));
        #[cfg(feature = "mysql")]
        lists.push(("mysql", crate::backend::mysql::MIGRATIONS));
        for (db, embedded) in lists {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(db);
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|name| name.ends_with(".sql"))
                .collect();
            files.sort();
            let names: Vec<&str> = embedded.iter().map(|(name, _)| *name).collect();
            assert_eq!(names, files, "{db}: list every file of {}", dir.display());
            let migrator = super::migrator(embedded);
            let versions: Vec<i64> = migrator.iter().map(|m| m.version).collect();
            let mut sorted = versions.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(versions, sorted, "{db}: versions increase");
        }
    }
}
