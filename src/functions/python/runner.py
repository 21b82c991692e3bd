# svc's Python zygote. svc starts this interpreter once per worker, already fenced in (Landlock,
# seccomp, rlimits, an empty environment, a scratch directory as its working directory), and
# talks to it in JSON lines on its standard input and output. Each run is a fork of this
# warm interpreter, so a run starts in microseconds and nothing it does survives it.
#
# Started with "warm" in its hello, the same interpreter is instead one process version's warm
# worker: the first run sets the run's fences on the interpreter itself, runs the code's top
# level and keeps it, and every later run calls its `main` in place (see `warm_loop`).
#
# svc -> zygote  {"run": {...}}                a run (or, with "check", a syntax check)
# child -> svc   {"call": name, "args": [...]} a host call; svc answers {"ok": v} or {"err": m}
# child -> svc   {"log": line}
# child -> svc   {"done": output} | {"error": {"message", "memory"}} | {"syntax": {...}}
# zygote -> svc  {"exit": {"code", "signal", "timeout"}}   after the child is gone
import ast
import builtins
import ctypes
import gc
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import types

MAX_OUTPUT = 1 << 20
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class Channel:
    """One end of svc's pipes: JSON lines, read and written whole."""

    def __init__(self, rfd, wfd):
        self.rfd, self.wfd, self.buf = rfd, wfd, b""

    def read(self):
        while b"\n" not in self.buf:
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, message, lead=b""):
        self.write(lead + json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def write(self, data):
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view):]


# The pipes move to private descriptors; 0 and 1 become /dev/null so that nothing the code
# prints at the C level can garble the protocol.
CTL = Channel(os.dup(0), os.dup(1))
NULL = os.open(os.devnull, os.O_RDWR)
os.dup2(NULL, 0)
os.dup2(NULL, 1)
LIBC = ctypes.CDLL(None, use_errno=True)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_filter(program):
    """Installs one seccomp program compiled by svc (seccompiler) on this process."""
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp")


def denied(attempt):
    try:
        attempt()
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def self_test():
    """What the fences refuse, tried from inside: svc reports it and needs the first two."""
    outside = os.path.join(os.path.dirname(os.getcwd()), "svc-python-probe-%d" % os.getpid())

    def write_outside():
        with open(outside, "w"):
            pass
        os.unlink(outside)

    return {
        "version": sys.version.split()[0],
        "filesystem": denied(lambda: os.listdir("/")) and denied(write_outside),
        "network": denied(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
        "signals": denied(lambda: os.kill(os.getppid(), 0)),
    }


class HostError(Exception):
    """A host call svc refused (the message says why)."""


def host_call(name, *args):
    CTL.send({"call": name, "args": list(args)})
    reply = CTL.read()
    if reply is None:
        os._exit(3)
    if "err" in reply:
        raise HostError(reply["err"])
    return reply.get("ok")


def show(value):
    if isinstance(value, str):
        return value
    if isinstance(value, BaseException):
        return "%s: %s" % (type(value).__name__, value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def log(*args):
    CTL.send({"log": " ".join(show(a) for a in args)})


class LogStream:
    """`print` and `sys.stderr` in a run: each line is a log line."""

    def __init__(self, prefix=""):
        self.prefix, self.pending = prefix, ""

    def write(self, text):
        self.pending += text
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            CTL.send({"log": self.prefix + line})
        return len(text)

    def flush(self):
        if self.pending:
            CTL.send({"log": self.prefix + self.pending})
            self.pending = ""


def make_svc():
    """The `svc` object of a run (a new one for each run of a warm worker)."""
    return types.SimpleNamespace(
        tag=types.SimpleNamespace(
            read=lambda topic: host_call("tag.read", topic),
            write=lambda topic, value: host_call("tag.write", topic, value),
        ),
        records=types.SimpleNamespace(
            create=lambda table, record: host_call("records.create", table, record),
            get=lambda id: host_call("records.get", id),
            list=lambda table, query=None: host_call("records.list", table, query or {}),
        ),
        log=log,
        HostError=HostError,
    )


def freeze(value):
    if isinstance(value, dict):
        return types.MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def where(error):
    """' (main.py line N)' for the innermost frame of the user's code."""
    line = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "main.py":
            line = tb.tb_lineno
        tb = tb.tb_next
    return "" if line is None else " (main.py line %d)" % line


def compiled(code):
    """The module and, when the code ends with an expression, that expression apart."""
    tree = ast.parse(code, "main.py")
    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = compile(ast.Expression(tree.body.pop().value), "main.py", "eval")
    return compile(tree, "main.py", "exec"), tail


def call_main(main, given):
    try:
        params = main.__code__.co_argcount
    except AttributeError:
        params = 1
    return main(given) if params else main()


def execute(req, code):
    try:
        if isinstance(code, BaseException):
            raise code
        module, tail = code if code is not None else compiled(req["code"])
    except (SyntaxError, ValueError) as e:
        CTL.send({"syntax": {"message": getattr(e, "msg", str(e)),
                             "line": getattr(e, "lineno", None),
                             "column": getattr(e, "offset", None)}})
        return
    if req.get("check"):
        CTL.send({"done": None})
        return
    given = req.get("input")
    env = run_globals(req, {"__name__": "__main__", "__builtins__": builtins})

    def body():
        exec(module, env)
        if callable(env.get("main")):
            return call_main(env["main"], given)
        return eval(tail, env) if tail is not None else None

    guarded(body)


def run_globals(req, env):
    """`env` with the run's own `svc`, `input` and frozen `inputs`/`config`."""
    env["svc"] = make_svc()
    env["input"] = req.get("input")
    env.update((name, freeze(value)) for name, value in (req.get("globals") or {}).items())
    return env


def guarded(body):
    """Runs `body` with the run's log streams and sends its output (or why there is none)."""
    sys.stdout, sys.stderr = LogStream(), LogStream("error: ")
    try:
        output = body()
        if type(output).__name__ == "coroutine":
            import asyncio
            output = asyncio.run(output)
    except MemoryError:
        return fail("MemoryError", memory=True)
    except BaseException as e:  # SystemExit and KeyboardInterrupt are the code's failures too
        return fail("%s: %s%s" % (type(e).__name__, e, where(e)))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    finish(output)


def finish(output):
    try:
        text = json.dumps(output, allow_nan=False, ensure_ascii=False)
    except MemoryError:
        return fail("MemoryError", memory=True)
    except (TypeError, ValueError, RecursionError) as e:
        return fail("the output cannot be converted to JSON: %s" % e)
    if len(text.encode()) > MAX_OUTPUT:
        return fail("the output is larger than 1 MiB")
    CTL.write(b'{"done":' + text.encode() + b"}\n")


def fail(message, memory=False):
    CTL.send({"error": {"message": message, "memory": memory}})


class CodeCache:
    """Compiled code by source, kept by the zygote so that each fork inherits it: compiling
    runs no code, and a run that changes the compiled objects changes only its own copy."""

    SIZE = 64

    def __init__(self):
        self.entries = {}

    def get(self, source):
        """(module, tail), or the SyntaxError/ValueError that compiling raised."""
        hit = self.entries.pop(source, None)
        if hit is None:
            try:
                hit = compiled(source)
            except (SyntaxError, ValueError) as e:
                hit = e
            except (MemoryError, RecursionError):
                return None  # compiled again, and failed, in the child
            if len(self.entries) >= self.SIZE:
                self.entries.pop(next(iter(self.entries)))
        self.entries[source] = hit
        return hit


def child(req, run_dir, filters, code):
    os.dup2(NULL, 2)
    os.chdir(run_dir)
    cpu = req.get("cpu_seconds") or 1
    fence(req, filters, (cpu, cpu))
    execute(req, code)


def fence(req, filters, cpu):
    """A run's fences on this process: its rlimits, then the seccomp programs that stop it
    from lifting them (or forking, exec'ing, signalling)."""
    limit = req.get("memory_limit") or 0
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, cpu)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    for program in filters:
        install_filter(program)


class Warm:
    """One process version kept loaded: its top level ran once, later runs call its `main`."""

    def __init__(self, req, filters):
        # The CPU budget is svc's to raise before each run (prlimit); the code cannot.
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        fence(req, filters, (req.get("cpu_seconds") or 1, hard))
        self.env = None

    def run(self, req):
        # The worker's scratch directory is its own: each run works in it and leaves it empty
        # (a directory per run, as a zygote's children get, would cost a mkdir and an rmdir).
        os.chdir(SCRATCH)
        try:
            if self.env is None:
                self.first(req)
            else:
                env = run_globals(req, self.env)
                guarded(lambda: call_main(env["main"], env["input"]))
        finally:
            os.chdir(SCRATCH)
            clean(SCRATCH)

    def first(self, req):
        try:
            module, tail = compiled(req["code"])
        except (SyntaxError, ValueError) as e:
            CTL.send({"syntax": {"message": getattr(e, "msg", str(e)),
                                 "line": getattr(e, "lineno", None),
                                 "column": getattr(e, "offset", None)}})
            return
        env = run_globals(req, {"__name__": "__main__", "__builtins__": builtins})

        def body():
            exec(module, env)
            if callable(env.get("main")):
                self.env = env
                CTL.send({"warm": "main"})
                return call_main(env["main"], env["input"])
            # No `main`: the code itself is the run, so every run must start fresh.
            CTL.send({"warm": "whole"})
            return eval(tail, env) if tail is not None else None

        guarded(body)


def warm_loop(filters):
    """A warm worker's life: runs of its one process version until svc closes the pipe."""
    os.dup2(NULL, 2)
    worker = None
    while True:
        message = CTL.read()
        if message is None:
            return
        req = message.get("run")
        if req is None:
            continue
        if worker is None:
            try:
                worker = Warm(req, filters)
            except BaseException as e:
                return fail("the sandbox could not be set up: %s" % e)
        worker.run(req)


def clean(scratch):
    """Empties the scratch directory: nothing a run wrote survives it."""
    for entry in os.scandir(scratch):
        try:
            if entry.is_dir(follow_symlinks=False):
                try:
                    os.rmdir(entry.path)  # the common case: the run left nothing
                except OSError:
                    remove_tree(entry.path)
            else:
                os.unlink(entry.path)
        except Exception as e:  # the zygote goes on; svc's log says what stayed
            print("svc python: could not remove %s: %s" % (entry.path, e), file=sys.stderr)


def remove_tree(path):
    """rmtree, once more after making every directory writable (a run may chmod its own)."""
    try:
        shutil.rmtree(path)
    except PermissionError:
        os.chmod(path, 0o700)
        for root, dirs, _ in os.walk(path):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(path)


def wait(pid, timeout):
    """Waits for the child until its time limit, then kills it."""
    timed_out = False
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
        timed_out = not ready
    finally:
        os.close(pidfd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return {"code": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timeout": timed_out}


SCRATCH = os.getcwd()


def main():
    hello = CTL.read()
    filters = [bytes.fromhex(p) for p in hello["child_filters"]]
    scratch = SCRATCH
    CTL.send({"ready": self_test()})
    if hello.get("warm"):
        return warm_loop(filters)
    gc.collect()
    gc.freeze()
    runs = 0
    cache = CodeCache()
    while True:
        message = CTL.read()
        if message is None:
            return
        req = message.get("run")
        if req is None:
            continue  # a stale answer to a call of a child that was killed
        runs += 1
        code = cache.get(req["code"])
        run_dir = os.path.join(scratch, "run-%d" % runs)
        os.mkdir(run_dir, 0o700)
        pid = os.fork()
        if pid == 0:
            try:
                child(req, run_dir, filters, code)
            except BaseException as e:
                fail("the sandbox could not be set up: %s" % e)
            finally:
                os._exit(0)
        outcome = wait(pid, req.get("timeout", 1.0))
        clean(scratch)
        # The newline ends whatever a killed child left half-written.
        CTL.send({"exit": outcome}, lead=b"\n")


main()
