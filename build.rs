//! Embeds the web console (`console/`) into the binary at compile time.

fn main() {
    // One line per file on every build is noise; the files are listed in `console/`.
    // SAFETY: the build script is single-threaded; nothing else reads the environment here.
    unsafe { std::env::set_var("MEMORY_SERVE_QUIET", "1") };
    memory_serve::load_directory("console");
}
