"""The Docker fence's first process in the container, and the host half of its TCP relay.

Inside, this file runs as pid 1 (`python -I -S container_init.py DEADLINE_S FOLDER PORTS -- CMD`):
it listens on loopback PORT for each allowed port and forwards each connection to the unix socket
FOLDER/PORT.sock, runs CMD as an ordinary child (so signals behave as usual, unlike for pid 1),
reaps orphans, and exits with CMD's code (128+N when killed by signal N). Outside, `HostRelay`
accepts on those unix sockets and connects to the host's loopback PORT. The container's network
stays none: no other address or port is reachable.
"""

import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time

_LOOPBACKS = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))
_PUMPS: list[threading.Thread] = []
"""Every copying thread started; pid 1 waits for them before it exits (see DRAIN_S)."""
DRAIN_S = 5.0
"""How long pid 1 waits, after the command ends, for bytes the command sent to an allowed port
to be copied out: its exit ends every thread, and a command that sends and exits at once would
otherwise lose what the relay had not yet forwarded."""


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes one way until either side closes, then close both."""
    try:
        while chunk := source.recv(65536):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()


def _serve(listener: socket.socket, connect) -> None:
    """Accept forever; join each accepted connection to a fresh one from connect()."""
    while True:
        try:
            accepted, _ = listener.accept()
        except OSError:
            return
        try:
            outgoing = connect()
        except OSError:
            accepted.close()
            continue
        for source, target in ((accepted, outgoing), (outgoing, accepted)):
            pump = threading.Thread(target=_pump, args=(source, target), daemon=True)
            _PUMPS.append(pump)
            pump.start()


def _connect_host_loopback(port: int) -> socket.socket:
    """A connection to the host's loopback on port, IPv4 first, then IPv6."""
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=30)
    except OSError:
        return socket.create_connection(("::1", port), timeout=30)


class HostRelay:
    """Host side: unix sockets FOLDER/PORT.sock, each forwarded to 127.0.0.1:PORT."""

    def __init__(self, folder: str, ports: tuple[int, ...]):
        self.listeners = []
        for port in ports:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(os.path.join(folder, f"{port}.sock"))
            os.chmod(os.path.join(folder, f"{port}.sock"), 0o666)
            listener.listen(64)
            self.listeners.append(listener)
            connect = lambda port=port: _connect_host_loopback(port)
            threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()

    def close(self) -> None:
        for listener in self.listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()


def _container_main(arguments: list[str]) -> int:
    separator = arguments.index("--")
    deadline_s, folder = int(arguments[0]), arguments[1]
    ports, command = arguments[2:separator], arguments[separator + 1 :]
    # Should the controller die, the container still ends: pid 1 exiting kills everything.
    signal.signal(signal.SIGALRM, lambda *_: os._exit(124))
    signal.alarm(deadline_s)
    for port, (family, address) in itertools.product(ports, _LOOPBACKS):
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.bind((address, int(port)))
        except OSError:
            listener.close()  # no IPv6 loopback in this container
            continue
        listener.listen(64)
        path = os.path.join(folder, f"{port}.sock")

        def connect(path=path):
            outgoing = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            outgoing.connect(path)
            return outgoing

        threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()
    try:
        process = subprocess.Popen(command)
    except OSError as error:
        print(f"fence: cannot execute {command[0]}: {error.strerror}", file=sys.stderr)
        return 127 if isinstance(error, FileNotFoundError) else 126
    while True:  # reap every orphan until the command itself ends
        pid, status = os.waitpid(-1, 0)
        if pid == process.pid:
            _drain(time.monotonic() + DRAIN_S)
            return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _drain(deadline: float) -> None:
    """Let the copying threads finish (the command's ends of its connections are closed, so
    they end at once) until `deadline`."""
    for pump in list(_PUMPS):
        pump.join(timeout=max(0.0, deadline - time.monotonic()))


if __name__ == "__main__":
    sys.exit(_container_main(sys.argv[1:]))
