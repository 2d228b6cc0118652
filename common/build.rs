// Rebuild when a migration is added: `sqlx::migrate!` (common/src/db.rs)
// embeds the migrations at compile time (as `sqlx migrate build-script` writes).
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
