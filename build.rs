//! Embeds the web console (`console/`) into the binary at compile time, and packs the binary's
//! relocations.

fn main() {
    // One line per file on every build is noise; the files are listed in `console/`.
    // SAFETY: the build script is single-threaded; nothing else reads the environment here.
    unsafe { std::env::set_var("MEMORY_SERVE_QUIET", "1") };
    memory_serve::load_directory("console");

    // Size (issue 17): a position-independent executable carries one 24-byte relocation per
    // pointer in its read-only data (1.6 MB of `.rela.dyn`). RELR packs the relative ones into
    // bitmaps, keeping ASLR. GNU ld 2.38+ and glibc 2.36+ (Debian 12) support it; an older GNU
    // ld ignores an unknown `-z` keyword with a warning.
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
