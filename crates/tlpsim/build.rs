//! Embeds the validation suite's system folders (`validation/*/`) in the library: every folder
//! with a `reference.toml` (or a `front.toml`: a system the front end computes) becomes one
//! entry of the table that `src/validation/registry.rs` includes, so adding a system is
//! adding a folder, with no Rust edit. The discovery itself is `src/validation/discover.rs`, which the tests also run.

#[path = "src/validation/discover.rs"]
mod discover;

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../../validation");
    // A folder is scanned recursively: a new system, cell file or template reruns this script.
    println!("cargo:rerun-if-changed={}", root.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/validation/discover.rs");
    let root = root
        .canonicalize()
        .unwrap_or_else(|e| panic!("validation folder {}: {e}", root.display()));
    let (systems, skipped) =
        discover::discover(&root).unwrap_or_else(|e| panic!("validation folders: {e}"));
    for dir in skipped {
        println!(
            "cargo:warning={} has no reference.toml or front.toml, so it is not a validated system",
            dir.display()
        );
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    std::fs::write(
        out.join("validation_systems.rs"),
        discover::generate(&systems),
    )
    .expect("OUT_DIR is writable");
}
