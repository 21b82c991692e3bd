//! Rebuilds when the web console (`console/`) changes, packs the binary's relocations, and
//! stamps the binary with its commit and build date for `svc --version`.

use std::path::Path;
use std::process::Command;

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

    println!("cargo:rustc-env=SVC_BUILD_COMMIT={}", commit());
    println!("cargo:rustc-env=SVC_BUILD_DATE={}", build_date());
}

/// `git rev-parse --short HEAD` of the source tree, or `unknown` outside a git checkout (a
/// crate tarball, a source package) or without git. Asks cargo to run this again when HEAD
/// moves: HEAD itself (a checkout) and the branch it names (a commit).
fn commit() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join(".git").exists() {
        return "unknown".into();
    }
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let Some(commit) = git(&["rev-parse", "--short", "HEAD"]) else {
        return "unknown".into();
    };
    // `--git-path` resolves a worktree's HEAD (its own) and branch refs (the common dir). A
    // path that does not exist (a packed ref) is not named: cargo would then rerun every build.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    for path in watched.into_iter().flatten() {
        let path = root.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    commit
}

/// The build's date (UTC, `YYYY-MM-DD`): `SOURCE_DATE_EPOCH` when set, so a reproducible
/// build stamps the same date on every machine; otherwise the time this script runs (the
/// last build after a commit or a change of this file).
fn build_date() -> String {
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let seconds = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(text) => text
            .trim()
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("SOURCE_DATE_EPOCH is not a number of seconds: {text}")),
        Err(_) => chrono::Utc::now().timestamp(),
    };
    chrono::DateTime::from_timestamp(seconds, 0)
        .unwrap_or_else(|| panic!("SOURCE_DATE_EPOCH is out of range: {seconds}"))
        .format("%Y-%m-%d")
        .to_string()
}
