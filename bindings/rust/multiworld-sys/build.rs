//! Finds libmultiworld and tells cargo how to link it, in this order:
//!
//! 1. `MULTIWORLD_LIB_DIR` (and optionally `MULTIWORLD_INCLUDE_DIR`);
//! 2. the `pkg-config` program: `pkg-config multiworld` (run as a program,
//!    so no crate is needed; `PKG_CONFIG` names another executable and
//!    `MULTIWORLD_NO_PKG_CONFIG=1` skips this step);
//! 3. the CMake build tree of the repository this crate lives in:
//!    `MULTIWORLD_BUILD_DIR`, else `<repo>/build`, through the
//!    `pkgconfig-build-tree/multiworld.pc` file CMake writes there.
//!
//! The choice is printed as a cargo warning. The library's files are also
//! symlinked into `OUT_DIR/lib`, which is the link search path: cargo adds
//! search paths inside its target directory to the dynamic loader path of
//! `cargo run` and `cargo test`, for this crate and every crate depending on
//! it, so those find `libmultiworld.so` without `LD_LIBRARY_PATH`.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Found {
    lib_dir: PathBuf,
    include_dir: Option<PathBuf>,
    how: String,
}

fn main() {
    for var in &[
        "MULTIWORLD_LIB_DIR",
        "MULTIWORLD_INCLUDE_DIR",
        "MULTIWORLD_NO_PKG_CONFIG",
        "MULTIWORLD_BUILD_DIR",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    println!("cargo:rerun-if-changed=build.rs");

    let found = match from_env().or_else(from_pkg_config).or_else(from_build_tree) {
        Some(found) => found,
        None => {
            eprintln!(
                "multiworld-sys: cannot find libmultiworld. Tried, in order:\n  \
                 1. MULTIWORLD_LIB_DIR (unset)\n  \
                 2. `pkg-config multiworld` (not found; set PKG_CONFIG_PATH to the directory \
                 holding multiworld.pc, e.g. <build>/pkgconfig-build-tree)\n  \
                 3. the CMake build tree (MULTIWORLD_BUILD_DIR, default <repo>/build: no \
                 pkgconfig-build-tree/multiworld.pc there)\n\
                 Build the library first (scripts/build.sh) or point one of these at it."
            );
            std::process::exit(1);
        }
    };

    let lib_file = found.lib_dir.join("libmultiworld.so");
    if !lib_file.exists() {
        println!(
            "cargo:warning=multiworld-sys: {} does not exist (yet); linking may fail",
            lib_file.display()
        );
    }
    println!("cargo:rerun-if-changed={}", lib_file.display());

    let lib_dir = fs::canonicalize(&found.lib_dir).unwrap_or_else(|_| found.lib_dir.clone());
    let link_dir = mirror_into_out_dir(&lib_dir).unwrap_or_else(|| lib_dir.clone());
    println!("cargo:rustc-link-search=native={}", link_dir.display());
    println!("cargo:rustc-link-lib=dylib=multiworld");
    // This crate's own tests (bindgen's layout tests) get an rpath; link
    // arguments do not reach dependents.
    if cfg!(unix) {
        println!(
            "cargo:rustc-link-arg=-Wl,-rpath,{}",
            found.lib_dir.display()
        );
    }
    println!(
        "cargo:warning=multiworld-sys: using libmultiworld from {} (found by {})",
        found.lib_dir.display(),
        found.how
    );

    // Metadata for dependents' build scripts (DEP_MULTIWORLD_*).
    println!("cargo:lib_dir={}", found.lib_dir.display());
    println!("cargo:found_by={}", found.how);
    if let Some(inc) = &found.include_dir {
        println!("cargo:include={}", inc.display());
    }
}

fn from_env() -> Option<Found> {
    let dir = env::var_os("MULTIWORLD_LIB_DIR").filter(|d| !d.is_empty())?;
    Some(Found {
        lib_dir: PathBuf::from(dir),
        include_dir: env::var_os("MULTIWORLD_INCLUDE_DIR")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from),
        how: "MULTIWORLD_LIB_DIR".to_string(),
    })
}

fn pkg_config(args: &[&str]) -> Option<String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn from_pkg_config() -> Option<Found> {
    if env::var_os("MULTIWORLD_NO_PKG_CONFIG").map_or(false, |v| !v.is_empty() && v != "0") {
        return None;
    }
    pkg_config(&["--exists", "multiworld"])?;
    let libs = pkg_config(&["--libs-only-L", "multiworld"]).unwrap_or_default();
    let lib_dir = libs
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(PathBuf::from)
        .find(|d| d.join("libmultiworld.so").exists())
        .or_else(|| pkg_config(&["--variable=libdir", "multiworld"]).map(PathBuf::from))?;
    let include_dir = pkg_config(&["--variable=includedir", "multiworld"])
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    let version = pkg_config(&["--modversion", "multiworld"]).unwrap_or_default();
    let pc_path = env::var("PKG_CONFIG_PATH").unwrap_or_default();
    let how = if pc_path.is_empty() {
        format!("pkg-config, multiworld {}", version)
    } else {
        format!(
            "pkg-config, multiworld {}, PKG_CONFIG_PATH={}",
            version, pc_path
        )
    };
    Some(Found {
        lib_dir,
        include_dir,
        how,
    })
}

fn from_build_tree() -> Option<Found> {
    let build_dir = match env::var_os("MULTIWORLD_BUILD_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            // <repo>/bindings/rust/multiworld-sys -> <repo>/build
            let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
            manifest.parent()?.parent()?.parent()?.join("build")
        }
    };
    let pc = build_dir.join("pkgconfig-build-tree").join("multiworld.pc");
    println!("cargo:rerun-if-changed={}", pc.display());
    let text = fs::read_to_string(&pc).ok()?;
    let var = |name: &str| -> Option<PathBuf> {
        text.lines()
            .filter_map(|l| l.strip_prefix(name))
            .filter_map(|l| l.strip_prefix('='))
            .map(|v| PathBuf::from(v.trim()))
            .next()
    };
    Some(Found {
        lib_dir: var("libdir")?,
        include_dir: var("includedir"),
        how: format!("the CMake build tree, {}", pc.display()),
    })
}

/// Symlinks every `libmultiworld.so*` of `lib_dir` into `OUT_DIR/lib` and
/// returns that directory. Cargo puts search paths inside its target
/// directory on the loader path of the programs it runs, so tests, examples
/// and dependents' `cargo run` find the library.
fn mirror_into_out_dir(lib_dir: &Path) -> Option<PathBuf> {
    let out = PathBuf::from(env::var_os("OUT_DIR")?).join("lib");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).ok()?;
    let mut any = false;
    for entry in fs::read_dir(lib_dir).ok()? {
        let entry = entry.ok()?;
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("libmultiworld.so") {
            continue;
        }
        symlink(&entry.path(), &out.join(&name)).ok()?;
        any = true;
    }
    if any {
        Some(out)
    } else {
        None
    }
}

#[cfg(unix)]
fn symlink(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(src, dst)
}

#[cfg(not(unix))]
fn symlink(src: &Path, dst: &Path) -> std::io::Result<()> {
    fs::copy(src, dst).map(|_| ())
}
