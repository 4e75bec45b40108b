//! Embeds the migrations: for each database's folder under `migrations/`, writes
//! `$OUT_DIR/migrations_<database>.rs`, the `&[(file name, SQL)]` of its `.sql` files in
//! version order (each SQL by `include_str!`), which `backend::migrations` makes into a
//! sqlx `Migrator`. Cargo reruns it when a file there is added, changed or removed, so a
//! new migration needs no list to be edited.

use std::{env, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("migrations");
    let out = env::var("OUT_DIR").unwrap();
    for db in ["sqlite", "postgres", "mysql"] {
        let dir = root.join(db);
        let mut files: Vec<String> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        files.sort();
        let mut code = String::from("&[\n");
        let mut versions = Vec::new();
        for name in &files {
            // sqlx's naming: VERSION_DESCRIPTION.sql, the version 14 digits (a timestamp),
            // so that file order is version order.
            let version = name.split_once('_').map(|(v, _)| v).unwrap_or("");
            assert!(
                version.len() == 14 && version.bytes().all(|b| b.is_ascii_digit()),
                "migrations/{db}/{name}: name it YYYYMMDDhhmmss_description.sql"
            );
            assert!(
                !versions.contains(&version),
                "migrations/{db}/{name}: version {version} is taken by another file"
            );
            versions.push(version);
            let path = dir.join(name).display().to_string();
            code.push_str(&format!("    ({name:?}, include_str!({path:?})),\n"));
        }
        code.push(']');
        fs::write(Path::new(&out).join(format!("migrations_{db}.rs")), code).unwrap();
    }
}
