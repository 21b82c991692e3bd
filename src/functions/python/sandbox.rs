//! The fences around svc's Python interpreters, built with the Landlock maintainers' crate and
//! rust-vmm's seccompiler:
//! - **Landlock** (set before the interpreter starts): read and execute only beneath the
//!   interpreter's own directories (its `sys.path`, shared libraries, time zones), read and
//!   write only beneath the worker's scratch directory; no TCP bind or connect; no signals to
//!   processes outside the sandbox (ABI 6) and no abstract UNIX sockets outside it.
//! - **seccomp, whole interpreter**: no sockets at all, and none of the calls a sandbox escape
//!   or an attack on the host starts with (ptrace, mount, namespaces, keyrings, BPF, modules, …).
//! - **seccomp, each run** (installed by the forked child before the code runs; compiled here
//!   and handed to the interpreter as bytes): no fork, exec or signal, no raising its rlimits.
//! - **rlimits**: no core files; the interpreter's file sizes and descriptors capped; each run
//!   adds its own address-space and CPU limits.
//!
//! What the kernel lacks is not silently skipped: the interpreter tries each fence from inside
//! when it starts and svc reports what held ([`super::Report`]).

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The newest Landlock ABI svc asks for; older kernels get what they support.
const LANDLOCK_ABI: ABI = ABI::V6;
/// Largest file a run or the interpreter may write.
const MAX_FILE_BYTES: u64 = 64 << 20;
/// Descriptors the interpreter may hold (each run is capped lower by the interpreter).
const MAX_FILES: u64 = 256;

/// Files outside the interpreter's directories that it must read.
const SYSTEM_READS: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
];

/// What the interpreter itself says of where it lives.
#[derive(Debug, Clone)]
pub struct Interpreter {
    pub exe: PathBuf,
    /// Directories (and files) it reads: `sys.path`, prefixes, the executable.
    pub reads: Vec<PathBuf>,
}

/// Asks `exe` (unfenced, with an empty environment) where its modules live.
pub fn probe(exe: &Path) -> Result<Interpreter, String> {
    const SCRIPT: &str = "import json, sys; print(json.dumps([sys.executable, sys.prefix, \
                          sys.base_prefix, sys.exec_prefix] + [p for p in sys.path if p]))";
    let output = Command::new(exe)
        .args(["-I", "-c", SCRIPT])
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`{}` could not be started: {e}", exe.display()))?;
    if !output.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            exe.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let paths: Vec<String> = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("`{}` did not say where it lives: {e}", exe.display()))?;
    let mut reads: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    reads.push(exe.to_path_buf());
    reads.extend(SYSTEM_READS.iter().map(PathBuf::from));
    let exe = paths
        .first()
        .map_or_else(|| exe.to_path_buf(), PathBuf::from);
    Ok(Interpreter { exe, reads })
}

/// The first readable path `data_dir` lies beneath, if any: svc will not run Python that
/// could read its own store.
pub fn exposes(reads: &[PathBuf], data_dir: &Path) -> Option<PathBuf> {
    let data_dir = data_dir.canonicalize().ok()?;
    reads
        .iter()
        .filter_map(|p| p.canonicalize().ok())
        .find(|p| data_dir.starts_with(p))
}

/// The Landlock ruleset of one interpreter, created (its paths opened) before the fork.
fn ruleset(reads: &[PathBuf], scratch: &Path) -> Result<RulesetCreated, String> {
    let abi = LANDLOCK_ABI;
    let failed = |e: landlock::RulesetError| format!("the Landlock ruleset: {e}");
    Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(reads, AccessFs::from_read(abi))))
        .and_then(|r| r.add_rules(path_beneath_rules([scratch], AccessFs::from_all(abi))))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                ["/dev/null", "/dev/urandom"],
                AccessFs::from_file(abi),
            ))
        })
        .map_err(failed)
}

/// `python -I -c <runner>` fenced in: an empty environment, `scratch` as its working
/// directory, its own session, the rlimits, Landlock and the interpreter-wide seccomp filter
/// (applied in that order after the fork, before `exec`).
pub fn command(interpreter: &Interpreter, runner: &str, scratch: &Path) -> Result<Command, String> {
    let mut ruleset = Some(ruleset(&interpreter.reads, scratch)?);
    let filter = interpreter_filter()?;
    let mut command = Command::new(&interpreter.exe);
    command
        .args(["-I", "-c", runner])
        .env_clear()
        .current_dir(scratch)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only async-signal-safe calls: setsid, setrlimit, prctl,
    // landlock_restrict_self and seccomp; the ruleset and filter were built before the fork,
    // and the errors made here are raw OS errors (no allocation).
    unsafe {
        command.pre_exec(move || {
            libc::setsid();
            for (resource, limit) in [
                (libc::RLIMIT_CORE, 0),
                (libc::RLIMIT_FSIZE, MAX_FILE_BYTES),
                (libc::RLIMIT_NOFILE, MAX_FILES),
            ] {
                let rlimit = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                if libc::setrlimit(resource, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(ruleset) = ruleset.take() {
                ruleset
                    .restrict_self()
                    .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
            }
            seccompiler::apply_filter(&filter)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))
        });
    }
    Ok(command)
}

/// Syscalls no Python code of a user needs and a sandbox escape or an attack on the host
/// would: refused (EPERM) for the interpreter and everything it forks.
const INTERPRETER_DENIED: &[i64] = &[
    libc::SYS_socket,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_kexec_load,
    libc::SYS_reboot,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_syslog,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_quotactl,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_fanotify_init,
    libc::SYS_mknod,
    libc::SYS_mknodat,
];

/// Syscalls a run may not make, on top of [`INTERPRETER_DENIED`]: new processes, other
/// programs, signals (to its interpreter or anyone), and lifting its own rlimits.
const RUN_DENIED: &[i64] = &[
    libc::SYS_fork,
    libc::SYS_vfork,
    libc::SYS_execve,
    libc::SYS_execveat,
    libc::SYS_kill,
    libc::SYS_tkill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
    libc::SYS_pidfd_send_signal,
    libc::SYS_setrlimit,
];

fn arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        format!(
            "seccomp filters are not built for {}",
            std::env::consts::ARCH
        )
    })
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
) -> Result<BpfProgram, seccompiler::BackendError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch().map_err(|_| seccompiler::BackendError::InvalidTargetArch(String::new()))?,
    )?;
    filter.try_into()
}

fn denied_all(syscalls: &[i64]) -> BTreeMap<i64, Vec<SeccompRule>> {
    syscalls.iter().map(|&nr| (nr, Vec::new())).collect()
}

fn interpreter_filter() -> Result<BpfProgram, String> {
    arch()?;
    compile(denied_all(INTERPRETER_DENIED), libc::EPERM)
        .map_err(|e| format!("the interpreter's seccomp filter: {e}"))
}

/// One rule: argument `index` (a 64-bit word) compared with `value`.
fn when(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        index,
        SeccompCmpArgLen::Qword,
        op,
        value,
    )?])
}

/// The programs a run installs, as the bytes of their `sock_filter` arrays: [`RUN_DENIED`]
/// plus `clone` without `CLONE_THREAD` and `prlimit64` that sets a limit (EPERM); and
/// `clone3` (ENOSYS, whose flags a filter cannot read, so the C library falls back to `clone`
/// for threads, which stay allowed).
pub fn run_filters() -> Result<Vec<Vec<u8>>, String> {
    arch()?;
    let failed = |e: seccompiler::BackendError| format!("the run's seccomp filter: {e}");
    let mut rules = denied_all(RUN_DENIED);
    let no_thread = SeccompCmpOp::MaskedEq(libc::CLONE_THREAD as u64);
    rules.insert(
        libc::SYS_clone,
        vec![when(0, no_thread, 0).map_err(failed)?],
    );
    let sets_limit = when(2, SeccompCmpOp::Ne, 0).map_err(failed)?;
    rules.insert(libc::SYS_prlimit64, vec![sets_limit]);
    let main = compile(rules, libc::EPERM).map_err(failed)?;
    let clone3 = compile(denied_all(&[libc::SYS_clone3]), libc::ENOSYS).map_err(failed)?;
    Ok([main, clone3].iter().map(bytes_of).collect())
}

/// A compiled program as the kernel reads it: `{u16 code, u8 jt, u8 jf, u32 k}` per
/// instruction, in this machine's byte order.
fn bytes_of(program: &BpfProgram) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_this_machine() {
        let programs = run_filters().unwrap();
        assert_eq!(programs.len(), 2);
        assert!(programs.iter().all(|p| !p.is_empty() && p.len() % 8 == 0));
        assert!(!interpreter_filter().unwrap().is_empty());
    }

    #[test]
    fn a_data_dir_beneath_a_readable_path_is_found() {
        let dir = std::env::temp_dir();
        let reads = vec![PathBuf::from("/nonexistent"), dir.clone()];
        assert_eq!(exposes(&reads, &dir), dir.canonicalize().ok());
        assert_eq!(exposes(&reads[..1], &dir), None);
    }
}
