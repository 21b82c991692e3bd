//! The Debian package (issue 39), end to end on this machine (a root container, no systemd as
//! PID 1): builds it with `scripts/deb` from a copy of the test build (`cargo deb --no-build`:
//! the packaging is under test, not the optimiser; scripts/release packages the release
//! build), checks it with lintian, installs it with `dpkg -i`, checks every file it placed,
//! runs the installed binary as the package's user (setpriv) with the unit's command line, environment
//! and data dir until its `ready` line and systemd's READY=1, checks the unit with
//! `systemd-analyze verify` and `security --offline` (exposure at most 2.0) and that its
//! system call filter lets the Python sandbox fence itself, then removes the package (data
//! kept) and purges it (data gone).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const UNIT: &str = "/usr/lib/systemd/system/svc.service";
const DATA_DIR: &str = "/var/lib/svc";
const CONFIG: &str = "/etc/svc/svc.toml";
/// The README's test command, which installs every tool this test drives.
/// Where `systemctl enable svc` (deb-systemd-helper, on install) links the unit.
const ENABLED: &str = "/etc/systemd/system/multi-user.target.wants/svc.service";
const TEST_COMMAND: &str = "run the README's test command (scripts/test.sh), which installs it";

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// Runs `program args`, failing the test with a sentence when the tool is missing.
fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("`{program}` could not be started ({e}): {TEST_COMMAND}"))
}

/// Runs `program args` and returns its stdout; any failure fails the test with its output.
fn ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "`{program} {}` failed ({}):\n{}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_tools_installed() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root,
        "the package test installs a .deb system-wide and runs svc as its user: run it as root \
         (CI and this workplace's machines are root)"
    );
    for (tool, package) in [
        ("dpkg", "dpkg"),
        ("lintian", "lintian"),
        ("systemd-analyze", "systemd"),
        ("setpriv", "util-linux"),
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "`{tool}` (Debian's {package}) is not installed: {TEST_COMMAND}"
        );
    }
    let deb = Command::new("cargo").args(["deb", "--version"]).output();
    assert!(
        deb.is_ok_and(|o| o.status.success()),
        "cargo-deb is not installed: {TEST_COMMAND}"
    );
}

/// Builds the package from a copy of the test build; returns the .deb's path.
fn build_package() -> PathBuf {
    let profile = target_dir().join("package-test");
    let out = profile.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    // A hard link, not a copy: the test build is 160 MB, and CI's disk is not ours to size.
    let staged = profile.join("svc");
    let _ = std::fs::remove_file(&staged);
    std::fs::hard_link(env!("CARGO_BIN_EXE_svc"), &staged)
        .or_else(|_| std::fs::copy(env!("CARGO_BIN_EXE_svc"), &staged).map(drop))
        .unwrap();
    let out_arg = format!("{}/", out.display());
    ok(
        "bash",
        &[
            "scripts/deb",
            "package-test",
            "--fast",
            "--output",
            &out_arg,
        ],
    );
    let deb = out.join(format!("svc_{}_amd64.deb", env!("CARGO_PKG_VERSION")));
    assert!(deb.is_file(), "scripts/deb wrote no {}", deb.display());
    deb
}

/// The unit's `Key=value` lines, in order.
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_debian_package_installs_runs_as_its_user_and_purges() {
    assert_tools_installed();
    // A package left by an earlier run that died half-way.
    let _ = run("dpkg", &["--purge", "svc"]);
    let deb = build_package();
    let deb = deb.to_str().unwrap();

    // lintian: no error and no warning (the package's overrides, each with its reason, are in
    // debian/lintian-overrides).
    ok("lintian", &["--fail-on", "error,warning", deb]);

    ok("dpkg", &["-i", deb]);

    // Every file the package placed, and nothing else (directories aside).
    let listed: BTreeSet<String> = ok("dpkg", &["-L", "svc"])
        .lines()
        .filter(|l| !Path::new(l).is_dir())
        .map(str::to_string)
        .collect();
    let mut expected: BTreeSet<String> = [
        "/usr/bin/svc",
        CONFIG,
        UNIT,
        "/usr/share/bash-completion/completions/svc",
        "/usr/share/zsh/vendor-completions/_svc",
        "/usr/share/fish/vendor_completions.d/svc.fish",
        "/usr/share/doc/svc/README.md",
        "/usr/share/doc/svc/copyright",
        "/usr/share/doc/svc/changelog.Debian.gz",
        "/usr/share/lintian/overrides/svc",
    ]
    .map(str::to_string)
    .into();
    let pages: Vec<&String> = listed
        .iter()
        .filter(|p| p.starts_with("/usr/share/man/man1/"))
        .collect();
    for page in ["svc.1.gz", "svc-serve.1.gz", "svc-records-list.1.gz"] {
        assert!(
            pages.iter().any(|p| p.ends_with(&format!("/{page}"))),
            "no man page {page}: {pages:?}"
        );
    }
    expected.extend(pages.iter().map(|p| p.to_string()));
    assert_eq!(listed, expected, "the package's files");
    for file in &listed {
        let meta = std::fs::metadata(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mode = meta.permissions().mode() & 0o7777;
        let want = match file.as_str() {
            "/usr/bin/svc" => 0o755,
            CONFIG => 0o640,
            _ => 0o644,
        };
        assert_eq!(mode, want, "{file} has mode {mode:o}");
    }
    let version = ok("/usr/bin/svc", &["--version"]);
    assert!(
        version.starts_with(concat!("svc ", env!("CARGO_PKG_VERSION"), " (commit ")),
        "{version}"
    );
    assert!(
        ok("dpkg-query", &["-W", "-f=${Conffiles}", "svc"]).contains(CONFIG),
        "{CONFIG} is not a conffile"
    );
    assert!(
        Path::new(ENABLED).is_symlink(),
        "the install did not enable svc.service ({ENABLED})"
    );

    // The system user: no login shell, a system uid, the data dir as home; the config file
    // is root's, readable by the group svc only.
    let passwd = ok("getent", &["passwd", "svc"]);
    let fields: Vec<&str> = passwd.trim().split(':').collect();
    let uid: u32 = fields[2].parse().unwrap();
    assert!(uid < 1000, "svc is not a system user: {passwd}");
    assert_eq!(fields[5], DATA_DIR, "{passwd}");
    assert_eq!(fields[6], "/usr/sbin/nologin", "{passwd}");
    let gid: u32 = ok("getent", &["group", "svc"])
        .split(':')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    let config = std::fs::metadata(CONFIG).unwrap();
    assert_eq!((config.uid(), config.gid()), (0, gid), "{CONFIG}'s owner");
    let data = std::fs::metadata(DATA_DIR).unwrap();
    assert_eq!((data.uid(), data.gid()), (uid, gid), "{DATA_DIR}'s owner");
    assert_eq!(
        data.permissions().mode() & 0o7777,
        0o750,
        "{DATA_DIR}'s mode"
    );
    let config_text = std::fs::read_to_string(CONFIG).unwrap();
    assert!(
        config_text
            .lines()
            .all(|l| l.is_empty() || l.starts_with('#'))
            && config_text.contains("#http_port = 6188"),
        "{config_text}"
    );

    // The unit: systemd's own checks, and its exposure score.
    let unit = std::fs::read_to_string(UNIT).unwrap();
    ok("systemd-analyze", &["verify", "--man=no", UNIT]);
    let security = run("systemd-analyze", &["security", "--offline=true", UNIT]);
    let report = String::from_utf8_lossy(&security.stdout).into_owned();
    let score: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("→ Overall exposure level for svc.service: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{report}"));
    println!("systemd-analyze security --offline=true {UNIT}: exposure {score}");
    assert!(score <= 2.0, "exposure {score} is above 2.0:\n{report}");
    assert_python_sandbox_calls_allowed(&unit);

    // The installed binary as the unit runs it: its user, command line, environment, working
    // directory and umask; free ports so no other test's server collides; READY=1 to an
    // abstract socket (no file permissions between root and svc) as systemd's NOTIFY_SOCKET.
    let exec: Vec<String> = unit_values(&unit, "ExecStart")[0]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let environment = unit_values(&unit, "Environment");
    assert_eq!(environment, [format!("SVC_DATA_DIR={DATA_DIR}")]);
    assert_eq!(unit_values(&unit, "WorkingDirectory"), [DATA_DIR]);
    assert_eq!(unit_values(&unit, "UMask"), ["0027"]);
    let notify_name = format!("svc-package-test-{}", std::process::id());
    let notify =
        UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(notify_name.as_bytes()).unwrap())
            .unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let script = format!("umask 0027; exec {} \"$@\"", exec.join(" "));
    // setpriv execs (runuser would stay the parent and turn SIGTERM into its own exit).
    let mut args: Vec<String> = [
        "--reuid=svc",
        "--regid=svc",
        "--init-groups",
        "--",
        "env",
        "-i",
    ]
    .map(String::from)
    .into();
    args.extend(environment.iter().cloned());
    args.push(format!("NOTIFY_SOCKET=@{notify_name}"));
    args.extend(["sh", "-c", &script, "svc"].map(String::from));
    args.extend(["--http-port", "0", "--mqtt-port", "0", "--ws-port", "0"].map(String::from));
    let mut server = Command::new("setpriv")
        .args(&args)
        .current_dir(DATA_DIR)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("setpriv could not be started ({e}): {TEST_COMMAND}"));
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    if !line.starts_with("ready {") {
        let _ = server.kill();
        let out = server.wait_with_output().unwrap();
        panic!(
            "the installed svc did not print its ready line: {line:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut buf = [0u8; 64];
    let received = notify.recv(&mut buf);
    let http = serde_json::from_str::<serde_json::Value>(&line["ready ".len()..]).unwrap()["http"]
        .as_str()
        .unwrap()
        .to_string();
    let health = reqwest::blocking::get(format!("http://{http}/readyz")).map(|r| r.status());
    // SIGTERM, as systemd stops it: the server closes its store and exits 0.
    ok("kill", &["-TERM", &server.id().to_string()]);
    let status = server.wait().unwrap();
    let stderr = {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut server.stderr.take().unwrap(), &mut text).unwrap();
        text
    };
    let n = received.unwrap_or_else(|e| panic!("no READY=1 on NOTIFY_SOCKET ({e}):\n{stderr}"));
    assert_eq!(&buf[..n], b"READY=1");
    assert!(
        health.as_ref().is_ok_and(|s| s.is_success()),
        "the installed svc is not ready on {http}: {health:?}"
    );
    assert!(
        status.success(),
        "svc did not exit 0 on SIGTERM: {status}\n{stderr}"
    );
    assert!(
        stderr.contains("sandboxed"),
        "the installed svc's Python sandbox did not come up:\n{stderr}"
    );
    // Written by svc: owned by svc, not readable by others (UMask=0027).
    let db = std::fs::metadata(Path::new(DATA_DIR).join("svc.db")).unwrap();
    assert_eq!(db.uid(), uid, "svc.db's owner");
    assert_eq!(
        db.permissions().mode() & 0o007,
        0,
        "svc.db is readable by others"
    );

    // Removed: the program goes, the data and the (conf)file stay; purged: everything goes.
    ok("dpkg", &["-r", "svc"]);
    assert!(
        !Path::new("/usr/bin/svc").exists(),
        "dpkg -r left /usr/bin/svc"
    );
    assert!(
        Path::new(DATA_DIR).join("svc.db").is_file(),
        "dpkg -r removed the data dir"
    );
    assert!(Path::new(CONFIG).is_file(), "dpkg -r removed the conffile");
    ok("dpkg", &["-P", "svc"]);
    for gone in [DATA_DIR, CONFIG, "/etc/svc", ENABLED] {
        // symlink_metadata: a dangling link left behind counts too.
        assert!(
            Path::new(gone).symlink_metadata().is_err(),
            "dpkg -P left {gone}"
        );
    }
    assert!(
        !ok("dpkg-statoverride", &["--list"]).contains(CONFIG),
        "dpkg -P left the statoverride of {CONFIG}"
    );
    let _ = std::fs::remove_dir_all(target_dir().join("package-test"));
}

/// The unit's system call filter lets the Python sandbox fence its interpreters
/// (src/functions/python/sandbox.rs: Landlock, seccomp, rlimits, a new session, fork of the
/// zygote) and the historian writer lower its priority: each call it makes is in the allow
/// list, expanded through `systemd-analyze syscall-filter`, and not in the deny list.
fn assert_python_sandbox_calls_allowed(unit: &str) {
    let filters = unit_values(unit, "SystemCallFilter");
    let (mut allowed, mut denied) = (BTreeSet::new(), BTreeSet::new());
    for filter in &filters {
        let (set, names) = match filter.strip_prefix('~') {
            Some(rest) => (&mut denied, rest),
            None => (&mut allowed, filter.as_str()),
        };
        for name in names.split_whitespace() {
            expand(name, set);
        }
    }
    for call in [
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
        "seccomp",
        "prctl",
        "setrlimit",
        "prlimit64",
        "setsid",
        "setpriority",
        "clone",
        "clone3",
        "wait4",
        "execve",
        "kill",
    ] {
        assert!(
            allowed.contains(call) && !denied.contains(call),
            "svc.service's SystemCallFilter= does not allow {call}, which svc calls: {filters:?}"
        );
    }
}

/// Adds `name` (a call, or a `@group` expanded recursively) to `set`.
fn expand(name: &str, set: &mut BTreeSet<String>) {
    if !name.starts_with('@') {
        set.insert(name.to_string());
        return;
    }
    let listing = ok("systemd-analyze", &["syscall-filter", name]);
    for entry in listing.lines().skip(1).map(str::trim) {
        if entry.is_empty() || entry.starts_with('#') {
            continue;
        }
        expand(entry, set);
    }
}
