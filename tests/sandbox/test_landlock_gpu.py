"""What `gpu=True` relaxes under Landlock for the CUDA driver, and everything it keeps closed.

These run on any machine: the relaxations are in the seccomp filter and the mounts, not in
the devices. Global /proc files are only ever opened for writing, never written to.
"""

import os
import socket
import sys
from pathlib import Path

import pytest

from sandbox.fence import get_fence

OPEN_FOR_WRITE = """
import os, sys
try:
    descriptor = os.open(sys.argv[1], os.O_WRONLY)
except OSError as error:
    print("refused", error.errno)
else:
    os.close(descriptor)  # nothing is ever written
    print("opened")
"""


@pytest.fixture
def landlock():
    return get_fence("landlock")


def run_python(landlock, policy, script: str, *arguments: str):
    return landlock.run([sys.executable, "-c", script, *arguments], policy)


@pytest.mark.parametrize("flags", [0, socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK])
def test_cuda_style_seqpacket_listener_works_only_with_gpu(landlock, layout, flags):
    script = f"""
import os, socket
listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | {flags})
listener.bind(b"\\0cuda-uvmfd-test-%d" % os.getpid())
listener.listen()
print("listening")
"""
    allowed = run_python(landlock, layout.policy(gpu=True), script)
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.strip() == "listening"
    refused = run_python(landlock, layout.policy(), script)
    assert refused.returncode != 0
    assert "PermissionError" in refused.stderr


@pytest.mark.parametrize("kind", ["SOCK_STREAM", "SOCK_DGRAM", "SOCK_RAW"])
def test_other_unix_socket_types_stay_refused_with_gpu(landlock, layout, kind):
    script = f"import socket; socket.socket(socket.AF_UNIX, socket.{kind})"
    result = run_python(landlock, layout.policy(gpu=True), script)
    assert result.returncode != 0
    assert "PermissionError" in result.stderr


def test_host_unix_stream_listener_unreachable_with_gpu(landlock, layout, tmp_path):
    address = tmp_path / "host-daemon.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen()
    listener.setblocking(False)
    script = """
import socket, sys
for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
    try:
        client = socket.socket(socket.AF_UNIX, kind)
        client.connect(sys.argv[1])
        client.sendall(b"from-the-fence")
        print("connected", kind)
    except OSError as error:
        print("refused", kind, error.errno)
"""
    try:
        result = run_python(landlock, layout.policy(gpu=True), script, str(address))
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr
    assert "connected" not in result.stdout
    assert result.stdout.count("refused") == 2


def test_host_seqpacket_listener_hidden_with_gpu(landlock, layout, tmp_path):
    address = tmp_path / "host-seqpacket.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(address))
    listener.listen()
    listener.setblocking(False)
    script = """
import socket, sys
client = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    client.connect(sys.argv[1])
    client.send(b"from-the-fence")
    print("connected")
except OSError as error:
    print("refused", error.errno)
"""
    try:
        result = run_python(landlock, layout.policy(gpu=True), script, str(address))
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("refused"), result.stdout


@pytest.mark.parametrize("path", ["/proc/sysrq-trigger", "/proc/sys/vm/drop_caches"])
def test_global_proc_files_stay_unwritable_with_gpu(landlock, layout, path):
    if not Path(path).exists():
        pytest.skip(f"{path} does not exist on this kernel")
    for gpu in (True, False):
        result = run_python(landlock, layout.policy(gpu=gpu), OPEN_FOR_WRITE, path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("refused"), (gpu, result.stdout)


def test_global_proc_folders_are_read_only_with_gpu(landlock, layout):
    script = """
import os
names = [n for n in os.listdir("/proc") if not n.isdigit()]
mounts = open("/proc/self/mountinfo").read().splitlines()
read_only = {line.split()[4] for line in mounts if "ro" in line.split()[5].split(",")}
for name in names:
    path = "/proc/" + name
    if not os.path.islink(path) and path not in read_only:
        print("writable", path)
print("checked", len(names))
"""
    result = run_python(landlock, layout.policy(gpu=True), script)
    assert result.returncode == 0, result.stderr
    assert "writable" not in result.stdout, result.stdout
    assert "checked" in result.stdout


def test_own_process_files_writable_only_with_gpu(landlock, layout):
    script = """
try:
    with open("/proc/self/comm", "w") as handle:
        handle.write("kc-renamed")
except OSError as error:
    print("refused", error.errno)
print(open("/proc/self/comm").read().strip())
"""
    allowed = run_python(landlock, layout.policy(gpu=True), script)
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.stdout.strip() == "kc-renamed"
    refused = run_python(landlock, layout.policy(), script)
    assert refused.returncode == 0, refused.stderr
    assert refused.stdout.startswith("refused")


def test_kernel_secrets_in_proc_are_masked_with_gpu(landlock, layout):
    present = [
        name
        for name in ("kallsyms", "keys", "key-users", "timer_list")
        if os.path.exists(f"/proc/{name}")
    ]
    if not present:
        pytest.skip("none of the masked /proc files exist here")
    script = """
import sys
for name in sys.argv[1:]:
    with open("/proc/" + name, "rb") as handle:
        print(name, len(handle.read()))
"""
    result = run_python(landlock, layout.policy(gpu=True), script, *present)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [word for name in present for word in (name, "0")]
