//! Rebuilds when the web console (`console/`) changes, and packs the binary's relocations.

fn main() {
    // `static_serve::embed_assets!` embeds every file of `console/`; a file added or removed
    // must rebuild the crate (a directory here is scanned whole).
    println!("cargo:rerun-if-changed=console");
    println!("cargo:rerun-if-changed=build.rs");

    // Size (issue 17): a position-independent executable carries one 24-byte relocation per
    // pointer in its read-only data (1.6 MB of `.rela.dyn`). RELR packs the relative ones into
    // bitmaps, keeping ASLR. GNU ld 2.38+ and glibc 2.36+ (Debian 12) support it; an older GNU
    // ld ignores an unknown `-z` keyword with a warning.
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
