//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds the
//! `migrations/` folders, and a proc macro cannot tell cargo to watch them.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
