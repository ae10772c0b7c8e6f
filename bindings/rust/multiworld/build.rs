//! Gives this crate's own tests, doc tests and examples an rpath to the
//! libmultiworld that multiworld-sys found (`DEP_MULTIWORLD_LIB_DIR`), so
//! they run without `LD_LIBRARY_PATH`, whatever the cargo version. Crates
//! depending on `multiworld` are not affected (cargo does not pass link
//! arguments on); `cargo run`/`cargo test` find the library through
//! multiworld-sys's `OUT_DIR`.
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_MULTIWORLD_LIB_DIR");
    if let Some(dir) = std::env::var_os("DEP_MULTIWORLD_LIB_DIR") {
        if cfg!(unix) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
        }
    }
}
