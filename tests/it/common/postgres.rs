//! A private PostgreSQL server for the tests of the PostgreSQL store engine (issue 18): the
//! binaries of Debian's `postgresql` package, a cluster initialised in a temporary directory
//! and run by an unprivileged user (PostgreSQL refuses to run as root), listening on a free
//! loopback port only, with one password-protected superuser. Each test server takes a fresh
//! database in it ([`Postgres::fresh_database`]); the outage tests stop and start it again.
//! Stopped (immediately) when dropped.

use super::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Output;

/// The superuser of the private cluster.
const SUPERUSER: &str = "svc";

pub struct Postgres {
    child: Option<Child>,
    bin: PathBuf,
    data: PathBuf,
    owner: Option<(u32, u32)>,
    _dir: tempfile::TempDir,
    password: String,
    databases: std::sync::atomic::AtomicU32,
    pub port: u16,
}

/// The directory of `initdb`, `postgres` and `psql`: the newest `/usr/lib/postgresql/<v>/bin`
/// (Debian puts them there, off the PATH).
fn postgres_bin() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .expect("PostgreSQL is not installed (scripts/test.sh installs the postgresql package)")
}

/// Runs `svc serve` on `database` in a fresh data directory until it prints its `ready` line
/// (then stops it) or exits by itself; what it printed, and whether it became ready.
pub fn serve_once(database: &str) -> (bool, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    serve_on(dir.path(), &["--database", database])
}

/// [`serve_once`] on the data directory `data_dir`, with `extra` flags.
pub fn serve_on(data_dir: &Path, extra: &[&str]) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(["serve", "--data-dir"])
        .arg(data_dir)
        .args(["--http-port", "0", "--mqtt-port", "0", "--ws-port", "0"])
        .args(["--admin-password", ADMIN_PASSWORD])
        .args(extra)
        .env_remove("SVC_CONFIG")
        .env_remove("SVC_DATABASE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn svc serve");
    let stdout = child.stdout.take().expect("stdout");
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("ready "));
    if ready {
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    let Output { stderr, .. } = child.wait_with_output().expect("wait for svc");
    (ready, String::from_utf8_lossy(&stderr).into_owned())
}

/// The database a `postgres://…/<name>?…` URL names.
pub fn database_name(url: &str) -> String {
    url.rsplit('/')
        .next()
        .and_then(|tail| tail.split('?').next())
        .expect("database name")
        .to_string()
}

/// The user and group ids PostgreSQL runs as when the tests run as root: the package's
/// `postgres` user, else `nobody`.
fn unprivileged_owner() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    ["postgres", "nobody"].iter().find_map(|name| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.len() > 3 && fields[0] == *name)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
    })
}

impl Postgres {
    /// Initialises a cluster and starts it; panics with the server's log when it does not come
    /// up within 30 s.
    pub fn start() -> Postgres {
        let bin = postgres_bin();
        sweep_abandoned_clusters();
        let dir = tempfile::Builder::new()
            .prefix(&format!("{CLUSTER_PREFIX}{}-", std::process::id()))
            .tempdir()
            .expect("temp dir");
        let owner = unprivileged_owner();
        let data = dir.path().join("data");
        let password = format!("pw-{}", uuid::Uuid::new_v4().simple());
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, &password).expect("write pwfile");
        if let Some((uid, gid)) = owner {
            for path in [dir.path(), pwfile.as_path()] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
            }
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "--auth=scram-sha-256", "--encoding=UTF8"])
            .args(["--locale=C", "--no-sync"])
            .arg(format!("--pwfile={}", pwfile.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_owner(&mut initdb, owner);
        let output = initdb.output().expect("run initdb");
        assert!(
            output.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut postgres = Postgres {
            child: None,
            bin,
            data,
            owner,
            _dir: dir,
            password,
            databases: Default::default(),
            port: free_port(),
        };
        postgres.start_server();
        postgres
    }

    /// Starts the server on its port (again, after [`Postgres::stop`]) and waits until it
    /// answers a query.
    pub fn start_server(&mut self) {
        assert!(self.child.is_none(), "the PostgreSQL server already runs");
        let log = std::fs::File::create(self._dir.path().join("server.log")).expect("log file");
        let mut server = Command::new(self.bin.join("postgres"));
        server
            .arg("-D")
            .arg(&self.data)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            .args(["-c", "fsync=off", "-c", "max_connections=200"])
            .args(["-p", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        as_owner(&mut server, self.owner);
        // The server stops (immediately) when the thread that started it ends, even when the
        // test process is killed: no cluster outlives its tests.
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            server.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT);
                Ok(())
            });
        }
        self.child = Some(server.spawn().expect("start postgres"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.psql("postgres", "SELECT 1").is_err() {
            if let Some(Some(status)) = self.child.as_mut().map(|c| c.try_wait().ok().flatten()) {
                panic!("postgres exited with {status}: {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Turns TLS on with this certificate and key (PEM), as an administrator would: the files
    /// in the data directory, `ssl = on` by `ALTER SYSTEM`, and a configuration reload. Waits
    /// until a TLS session is accepted.
    pub fn enable_tls(&self, cert_pem: &str, key_pem: &str) {
        for (name, pem) in [("server.crt", cert_pem), ("server.key", key_pem)] {
            let path = self.data.join(name);
            std::fs::write(&path, pem).expect("write a TLS file");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            if let Some((uid, gid)) = self.owner {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown");
            }
        }
        self.psql("postgres", "ALTER SYSTEM SET ssl = on")
            .expect("ssl = on");
        self.psql("postgres", "SELECT pg_reload_conf()")
            .expect("reload");
        let tls_url = self
            .url("postgres")
            .replace("sslmode=disable", "sslmode=require");
        let deadline = Instant::now() + Duration::from_secs(10);
        while let Err(e) = self.psql_at(&tls_url, "SELECT 1") {
            assert!(
                Instant::now() < deadline,
                "TLS never came up: {e}\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server at once (as a crash would), keeping its data.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGQUIT: PostgreSQL's immediate shutdown.
            // SAFETY: kill with a pid we own has no memory effects.
            unsafe { libc::kill(child.id() as i32, libc::SIGQUIT) };
            let _ = child.wait();
        }
    }

    /// The process id of the running server (the postmaster).
    pub fn server_pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The URL of a new empty database of its own, as `--database` takes it.
    pub fn fresh_database(&self) -> String {
        let n = self
            .databases
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("test_{n}");
        self.psql("postgres", &format!("CREATE DATABASE {name}"))
            .expect("create database");
        self.url(&name)
    }

    /// Drops the database at `url` (one [`Postgres::fresh_database`] gave), closing what is
    /// still connected to it; a failure (the server stopped by an outage test) leaves it.
    pub fn drop_database(&self, url: &str) {
        let name = database_name(url);
        if name.starts_with("test_") {
            let _ = self.psql(
                "postgres",
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            );
        }
    }

    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}?sslmode=disable",
            self.password, self.port
        )
    }

    /// Runs `sql` in `database` with `psql`; its output (unaligned, tuples only) or its error.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, String> {
        self.psql_at(&self.url(database), sql)
    }

    /// Runs `sql` with `psql` at `url` (another user or password, say).
    pub fn psql_at(&self, url: &str, sql: &str) -> Result<String, String> {
        let output = Command::new(self.bin.join("psql"))
            .arg(url)
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run psql: {e}"))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
        }
    }

    /// Runs the SQL script `sql` (a `pg_dump` in plain format, say) with `psql` at `url`,
    /// stopping at the first error; the error, if any.
    pub fn restore_at(&self, url: &str, sql: &[u8]) -> Result<(), String> {
        use std::io::Write;
        let mut psql = Command::new(self.bin.join("psql"))
            .arg(url)
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("run psql: {e}"))?;
        let mut stdin = psql.stdin.take().expect("psql stdin");
        let written = stdin.write_all(sql);
        drop(stdin);
        let output = psql.wait_with_output().map_err(|e| format!("psql: {e}"))?;
        written.map_err(|e| format!("write to psql: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `command` as `owner` (when the tests run as root).
/// The start of the temporary directory of every test cluster: then the test process's pid.
const CLUSTER_PREFIX: &str = "svc-test-postgres-";

/// Removes the directories of clusters whose test process has ended (one that shares its
/// cluster across tests, see [`shared_postgres`], cannot remove its own).
fn sweep_abandoned_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(CLUSTER_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The PostgreSQL server of this test process when its servers run on the PostgreSQL engine
/// (`SVC_TEST_ENGINE=postgres`): started once, from a thread that lives as long as the process
/// (so the server's parent-death signal comes only when the process ends).
pub fn shared_postgres() -> &'static Postgres {
    static SHARED: OnceLock<Postgres> = OnceLock::new();
    SHARED.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("shared-postgres".into())
            .spawn(move || {
                let _ = tx.send(Postgres::start());
                loop {
                    std::thread::park();
                }
            })
            .expect("spawn the shared PostgreSQL thread");
        rx.recv().expect("the shared PostgreSQL server")
    })
}

/// Whether this test run puts its servers on the PostgreSQL engine.
pub fn on_postgres() -> bool {
    std::env::var("SVC_TEST_ENGINE").is_ok_and(|engine| engine == "postgres")
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid).env("HOME", "/tmp");
    }
}
