//! Finds libnerve and tells cargo how to link it, in this order:
//!
//! 1. `NERVE_LIB_DIR`: a directory holding `libnerve.a` and/or `libnerve.so`
//!    (what `make test-rust` sets to the CMake build). The static library is
//!    preferred so that test binaries run without `LD_LIBRARY_PATH`; set
//!    `NERVE_LINK=dylib` to link the shared one.
//! 2. `pkg-config nerve` (an installed nerve, `cmake --install`): the shared
//!    library from the system's library path.
//! 3. The repository's own CMake build, `../../build` from this crate, when
//!    it holds `libnerve.a` (a `cargo build` right after `make build`).
//!
//! The directory found is passed on to dependent build scripts as
//! `DEP_NERVE_LIB_DIR` (the `links = "nerve"` convention).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn link_dir(dir: &Path) -> bool {
    let prefer_dylib = env::var("NERVE_LINK")
        .map(|v| v == "dylib")
        .unwrap_or(false);
    let a = dir.join("libnerve.a");
    let so = dir.join("libnerve.so");
    let kind = if a.is_file() && !prefer_dylib {
        println!("cargo:rerun-if-changed={}", a.display());
        "static"
    } else if so.exists() {
        println!("cargo:rerun-if-changed={}", so.display());
        "dylib"
    } else {
        return false;
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib={kind}=nerve");
    println!("cargo:lib_dir={}", dir.display());
    true
}

fn pkg_config() -> bool {
    let out = match Command::new("pkg-config")
        .args(["--libs", "nerve"])
        .output()
    {
        Ok(o) if o.status.success() => o,
        _ => return false,
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut linked = false;
    for word in text.split_whitespace() {
        if let Some(dir) = word.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:lib_dir={dir}");
        } else if let Some(lib) = word.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
            linked |= lib == "nerve";
        }
    }
    linked
}

fn main() {
    println!("cargo:rerun-if-env-changed=NERVE_LIB_DIR");
    println!("cargo:rerun-if-env-changed=NERVE_LINK");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Ok(dir) = env::var("NERVE_LIB_DIR") {
        if !link_dir(Path::new(&dir)) {
            panic!("NERVE_LIB_DIR={dir} holds neither libnerve.a nor libnerve.so");
        }
        return;
    }
    if pkg_config() {
        return;
    }
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let repo_build = manifest.join("../../build");
    if repo_build.join("libnerve.a").is_file() && link_dir(&repo_build) {
        return;
    }
    panic!(
        "libnerve not found: build it (`make build`) and set NERVE_LIB_DIR to \
         the directory holding libnerve.a, or install nerve so that \
         `pkg-config nerve` finds it"
    );
}
