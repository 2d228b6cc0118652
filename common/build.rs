// `sqlx::migrate!` embeds the migrations at compile time; rebuild when they
// change (sqlx's documented build script).
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
