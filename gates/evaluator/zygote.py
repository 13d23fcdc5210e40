"""`python -m gates.evaluator.zygote CONTROL_FD`: the worker fork server.

Starting a worker costs seconds before it does any work: the interpreter and the torch,
Triton and dynamo imports. The zygote pays that once per controller process: it imports those
libraries only (no solution, no task, not even `operators`, no CUDA call, no tensor op, so no
thread pool), then forks one child per worker. A child becomes exactly what
`python -m gates.evaluator.worker ...` would be: its own session and process group, stdout
and stderr to the phase log, stdin from /dev/null (a held worker: its channel, on which the
controller sends the release line), the worker's argv, environment and exit code.

Protocol. The control socket (SOCK_SEQPACKET, only the controller holds the other end)
carries one JSON request per message with two descriptors: the worker's channel (a stream
socket) and its log file. Replies go on the channel as JSON lines: `{"pid": N}` once forked,
then `{"exit": CODE}` when the zygote has reaped it (a signal is `-SIGNUM`, as Popen says),
or `{"error": ...}`. A request `{"describe": true}` answers what the zygote holds, for tests.
"""

import contextlib
import json
import os
import selectors
import signal
import socket
import sys

_exit = os._exit  # taken before anything else runs in this process or its children

# What a worker imports anyway and can import without a device: importing them here is what
# makes a fork start fast. `operators` and the evaluator's modules stay out: importing
# `operators` asks torch whether CUDA is available, which on an H200 loaded the driver and
# started its thread (benchmarks/zygote_threads.py), and a process with a second thread must
# not fork.
PRELOADED_MODULES = (
    "torch",
    "triton",
    "torch._dynamo",  # the first __torch_function__ call under a mode imports it (~1-3 s)
)


def main(control_fd: int) -> int:
    """Import, say ready, then fork workers until the controller closes the control socket."""
    import importlib

    for name in PRELOADED_MODULES:
        importlib.import_module(name)
    unsafe = _fork_hazard()
    if unsafe:
        print(f"the zygote will not fork: {unsafe}", file=sys.stderr)
        return 3
    control = socket.socket(fileno=control_fd)
    control.setblocking(True)
    control.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    Zygote(control).serve()
    return 0


class Zygote:
    """The fork loop: one thread, so each fork copies a process with no other thread."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.children: dict[int, socket.socket] = {}
        self.forked = 0
        self.wake_read, self.wake_write = socket.socketpair()
        self.wake_read.setblocking(False)
        self.wake_write.setblocking(False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_write.fileno(), warn_on_full_buffer=False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(control, selectors.EVENT_READ, "control")
        self.selector.register(self.wake_read, selectors.EVENT_READ, "children")

    def serve(self) -> None:
        """Fork on request; once the controller closes the control socket, stay only until
        the workers already forked have been reaped and reported."""
        accepting = True
        while accepting or self.children:
            for key, _ in self.selector.select():
                if key.data == "children":
                    self._reap()
                elif not self._handle_request():
                    accepting = False
                    self.selector.unregister(self.control)

    def _handle_request(self) -> bool:
        """Serve one request; False when the controller is gone."""
        try:
            message, fds, _, _ = socket.recv_fds(self.control, 1 << 20, 2)
        except OSError:
            return False
        if not message:
            return False
        request = json.loads(message)
        channel = socket.socket(fileno=fds[0])
        if request.get("describe"):
            _send(channel, self.describe())
            channel.close()
            return True
        log_fd = fds[1]
        threads = _thread_count()
        if threads != 1:  # a fork would copy a process whose other threads hold locks
            _send(channel, {"error": f"the zygote has {threads} threads; it forks with one"})
            channel.close()
            os.close(log_fd)
            return True
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._become_worker(request, channel, log_fd)
        os.close(log_fd)
        self.forked += 1
        self.children[pid] = channel
        _send(channel, {"pid": pid})
        return True

    def _reap(self) -> None:
        """Report every ended child on its channel (the wake-up bytes only say 'look')."""
        try:
            while self.wake_read.recv(4096):
                pass
        except BlockingIOError:
            pass
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            channel = self.children.pop(pid, None)
            if channel is not None:
                _send(channel, {"exit": os.waitstatus_to_exitcode(status)})
                channel.close()

    def describe(self) -> dict:
        """What a fork inherits: threads, CUDA state, the modules imported (for tests)."""
        import torch

        return {
            "pid": os.getpid(),
            "threads": _thread_count(),
            "cuda_initialized": torch.cuda.is_initialized(),
            "cuda_driver_initialised": _cuda_driver_initialised(),
            "modules": sorted(sys.modules),
            "workers_forked": self.forked,
        }

    def _become_worker(self, request: dict, channel: socket.socket, log_fd: int) -> None:
        """In the child: drop the zygote's descriptors and signal set-up, then run the worker
        phase as `python -m gates.evaluator.worker ARGV...` would; never returns."""
        code = 1
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            self.selector.close()
            for sock in (self.control, self.wake_read, self.wake_write, *self.children.values()):
                sock.close()
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.close(log_fd)
            if request["held"]:
                os.dup2(channel.fileno(), 0)
            else:
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
            channel.close()
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            from gates.evaluator import worker

            sys.argv = [worker.__file__, *request["argv"]]
            code = _exit_code(worker.main, request["argv"])
            _flush_and_run_exit_functions()
        finally:
            _exit(code)


def _exit_code(function, argv: list[str]) -> int:
    """What the interpreter would exit with after `sys.exit(function(argv))`."""
    try:
        result = function(argv)
    except SystemExit as exit_request:
        result = exit_request.code
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    if result is None:
        return 0
    if isinstance(result, int):
        return result
    print(result, file=sys.stderr)
    return 1


def _flush_and_run_exit_functions() -> None:
    """A fresh interpreter runs its exit functions and flushes its streams when it ends."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def _thread_names() -> list[str]:
    """The kernel's name of each thread (what names the library that started it)."""
    names = []
    for task in sorted(os.listdir("/proc/self/task")):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return names


def _cuda_driver_loaded() -> bool:
    """Whether libcuda is mapped here (loading it is harmless; initialising it is not)."""
    with open("/proc/self/maps") as maps:
        return any("libcuda.so" in line for line in maps)


def _cuda_driver_initialised() -> bool:
    """Whether cuInit ran here: a child forked after it cannot use CUDA. Torch's availability
    check stays off the driver through NVML (see forked_worker.py); an uninitialised driver
    answers cuCtxGetCurrent with CUDA_ERROR_NOT_INITIALIZED (3), and has no side effect."""
    if not _cuda_driver_loaded():
        return False
    import ctypes

    try:
        driver = ctypes.CDLL("libcuda.so.1")  # already mapped: only a handle, no init
        context = ctypes.c_void_p()
        return driver.cuCtxGetCurrent(ctypes.byref(context)) != 3
    except (OSError, AttributeError):
        return True  # mapped but not answering: assume the worst


def _fork_hazard() -> str | None:
    """Why forking this process would not give a clean worker, or None."""
    threads = _thread_count()
    if threads != 1:
        return f"{threads} threads run in it after its imports ({', '.join(_thread_names())})"
    if _cuda_driver_initialised():
        return "its imports initialised the CUDA driver"
    return None


def _send(channel: socket.socket, message: dict) -> None:
    with contextlib.suppress(OSError):  # a dropped worker: the controller kills its group
        channel.sendall(json.dumps(message).encode() + b"\n")


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
