"""Escape suite: each attack runs inside the fence and its effect is checked from outside."""

import os
import random
import signal
import socket
import subprocess
import sys

import pytest


def test_benign_command_reads_context_writes_workspace_and_returns_its_code(
    fence, layout, python_in_fence
):
    script = (
        "import os, sys\n"
        f"print(open({str(layout.context / 'notes.txt')!r}).read().strip())\n"
        "open('result.txt', 'w').write('written inside\\n')\n"
        "print('stdin:', sys.stdin.read().strip(), 'env:', os.environ.get('KC_ALLOWED'))\n"
        "print('to stderr', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    policy = layout.policy(env=("KC_ALLOWED",), env_values={"KC_ALLOWED": "visible"})
    result = python_in_fence(policy, script, stdin="hello\n")
    assert result.returncode == 3, result.stderr
    assert "context-for-the-agent" in result.stdout
    assert "stdin: hello env: visible" in result.stdout
    assert "to stderr" in result.stderr
    assert not result.timed_out
    assert (layout.workspace / "result.txt").read_text() == "written inside\n"


def test_write_outside_the_workspace_directly(fence, layout, python_in_fence):
    script = (
        f"for path in [{str(layout.victim)!r}, {str(layout.outside / 'new.txt')!r}]:\n"
        "    try:\n        open(path, 'w').write('pwned')\n        print('WROTE', path)\n"
        "    except OSError as error:\n        print('denied', error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "WROTE" not in result.stdout
    assert layout.victim.read_text() == "original\n"
    assert not (layout.outside / "new.txt").exists()


def test_write_through_symlinks_planted_in_the_workspace(fence, layout, python_in_fence):
    (layout.workspace / "file-link").symlink_to(layout.victim)
    (layout.workspace / "dir-link").symlink_to(layout.outside)
    script = (
        "for path in ['file-link', 'dir-link/created.txt', 'dir-link/victim.txt']:\n"
        "    try:\n        open(path, 'w').write('pwned')\n        print('WROTE', path)\n"
        "    except OSError as error:\n        print('denied', error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "WROTE" not in result.stdout
    assert layout.victim.read_text() == "original\n"
    assert not (layout.outside / "created.txt").exists()


def test_write_through_a_hardlink_made_inside(fence, layout, python_in_fence):
    script = (
        "import os\n"
        f"try:\n    os.link({str(layout.victim)!r}, 'hard')\n"
        "    open('hard', 'w').write('pwned')\n    print('LINKED')\n"
        "except OSError as error:\n    print('denied', error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "LINKED" not in result.stdout
    assert layout.victim.read_text() == "original\n"


def test_write_through_proc_root_links(fence, layout, python_in_fence):
    script = (
        "import os\n"
        f"for root in ['/proc/self/root', '/proc/1/root', f'/proc/{{os.getppid()}}/root']:\n"
        f"    path = root + {str(layout.victim)!r}\n"
        "    try:\n        open(path, 'w').write('pwned')\n        print('WROTE', path)\n"
        "    except OSError as error:\n        print('denied', error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "WROTE" not in result.stdout
    assert layout.victim.read_text() == "original\n"


def test_rename_out_of_the_workspace(fence, layout, python_in_fence):
    (layout.workspace / "precious.txt").write_text("keep me\n")
    script = (
        "import os\n"
        f"for source, target in [('precious.txt', {str(layout.outside / 'moved.txt')!r}),\n"
        f"                       ('.', {str(layout.outside / 'moved-workspace')!r})]:\n"
        "    try:\n        os.rename(source, target)\n        print('MOVED', source)\n"
        "    except OSError as error:\n        print('denied', error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "MOVED" not in result.stdout
    assert (layout.workspace / "precious.txt").read_text() == "keep me\n"
    assert not (layout.outside / "moved.txt").exists()


def test_read_secrets_outside_the_readable_set(fence, layout, python_in_fence):
    script = (
        f"for path in [{str(layout.home_secret)!r}, {str(layout.other_run_secret)!r},\n"
        "             '/etc/shadow']:\n"
        "    try:\n        print('READ', open(path).read())\n"
        "    except OSError as error:\n        print('denied', error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "home-secret-4419" not in result.stdout
    assert "other-run-secret-7731" not in result.stdout
    assert "READ" not in result.stdout


def test_secret_environment_variable_is_not_visible(fence, layout, python_in_fence, monkeypatch):
    monkeypatch.setenv("KC_TEST_API_KEY", "sk-secret-value-5512")
    script = "import os\nprint(dict(os.environ))\n"
    result = python_in_fence(layout.policy(env=("HOME",)), script)
    assert result.returncode == 0, result.stderr
    assert "sk-secret-value-5512" not in result.stdout + result.stderr
    assert "KC_TEST_API_KEY" not in result.stdout


def _listener() -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    return listener


def _received(listener: socket.socket) -> bytes | None:
    """Data from a connection already made to listener, or None when nobody connected."""
    try:
        connection, _ = listener.accept()
    except BlockingIOError:
        return None
    connection.settimeout(5)
    with connection:
        return connection.recv(100)


def _connect_script(port: int) -> str:
    return (
        "import socket\n"
        "try:\n"
        f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        "    s.sendall(b'leak'); s.close(); print('CONNECTED')\n"
        "except OSError as error:\n    print('denied', error)\n"
    )


def test_loopback_listener_gets_nothing_when_network_is_none(fence, layout, python_in_fence):
    with _listener() as listener:
        port = listener.getsockname()[1]
        result = python_in_fence(layout.policy(), _connect_script(port))
        assert "CONNECTED" not in result.stdout
        assert _received(listener) is None


def test_only_the_allowed_tcp_port_is_reachable(fence, layout, python_in_fence):
    with _listener() as allowed, _listener() as forbidden:
        allowed_port, forbidden_port = allowed.getsockname()[1], forbidden.getsockname()[1]
        policy = layout.policy(allow_tcp=(allowed_port,))
        script = _connect_script(forbidden_port) + _connect_script(allowed_port)
        result = python_in_fence(policy, script)
        assert _received(forbidden) is None
        assert _received(allowed) == b"leak", result.stdout + result.stderr


@pytest.mark.parametrize("ports", ["none", "tcp-allowed"])
def test_udp_sends_nothing(fence, layout, python_in_fence, ports):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    with receiver, _listener() as listener:
        allow = (listener.getsockname()[1],) if ports == "tcp-allowed" else ()
        script = (
            "import socket\n"
            "try:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"    s.sendto(b'udp', ('127.0.0.1', {receiver.getsockname()[1]})); print('SENT')\n"
            "except OSError as error:\n    print('denied', error)\n"
        )
        python_in_fence(layout.policy(allow_tcp=allow), script)
        with pytest.raises(BlockingIOError):
            receiver.recv(100)


def test_fork_bomb_hits_the_process_limit_and_leaves_nothing(
    fence, layout, python_in_fence, processes_with_marker
):
    marker = f"{random.randint(10**6, 10**7)}.25"
    script = (
        "import os, subprocess, sys\n"
        "children = 0\n"
        "try:\n"
        "    while children < 5000:\n"
        f"        subprocess.Popen(['sleep', {marker!r}]); children += 1\n"
        "except OSError as error:\n"
        "    print('LIMITED after', children, error)\n"
    )
    result = python_in_fence(layout.policy(), script)
    assert "LIMITED" in result.stdout, result.stdout + result.stderr
    assert processes_with_marker(marker) == []


def test_memory_past_the_limit_fails(fence, layout, python_in_fence):
    script = "block = bytearray(1024 * 1024 * 1024)\nblock[::4096] = b'x' * len(block[::4096])\n"
    script += "print('ALLOCATED')\n"
    policy = layout.policy(limits=layout.policy().limits.model_copy(update={"memory_mb": 256}))
    result = python_in_fence(policy, script)
    assert "ALLOCATED" not in result.stdout
    assert result.returncode != 0


@pytest.mark.parametrize("command_waits", [True, False], ids=["timeout", "exits-early"])
def test_descendants_do_not_outlive_the_command(
    fence, layout, python_in_fence, processes_with_marker, command_waits
):
    """Also: the container is removed, after a timeout as after a normal exit."""
    marker = f"{random.randint(10**6, 10**7)}.5"
    script = (
        "import os, subprocess, time\n"
        f"subprocess.Popen(['setsid', 'sleep', {marker!r}])\n"
        f"subprocess.Popen(['sleep', {marker!r}], start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', {marker!r}])\n"
        "    os._exit(0)\n"
        f"subprocess.Popen(['sh', '-c', 'sleep {marker} &'])\n"
        "time.sleep(0.5)\n"
        "print('SPAWNED', flush=True)\n"
    )
    if command_waits:
        script += "time.sleep(600)\n"
    result = python_in_fence(layout.policy(timeout_s=5 if command_waits else 30), script)
    assert "SPAWNED" in result.stdout, result.stderr
    assert result.timed_out is command_waits
    assert result.returncode == (124 if command_waits else 0)
    assert processes_with_marker(marker) == []
    if fence.name == "docker":
        assert labelled_containers_mentioning(marker) == []


@pytest.mark.parametrize("grant", ["readable", "readonly_within_workspace"])
def test_git_refs_stay_unchanged_when_git_is_read_only(fence, layout, python_in_fence, grant):
    def git(*arguments):
        return subprocess.run(
            ["git", *arguments], cwd=layout.workspace, capture_output=True, text=True, check=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    (layout.workspace / "file.txt").write_text("one\n")
    git("add", "file.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    head = git("rev-parse", "main")
    script = (
        "import os, shutil, subprocess\n"
        "attempts = [\n"
        "    lambda: open('.git/refs/heads/main', 'w').write('0' * 40),\n"
        "    lambda: open('.git/refs/heads/evil', 'w').write(open('.git/HEAD').read()),\n"
        "    lambda: open('.git/packed-refs', 'w').write(''),\n"
        "    lambda: os.rename('.git', 'git-moved'),\n"
        "    lambda: shutil.rmtree('.git'),\n"
        "]\n"
        "for attempt in attempts:\n"
        "    try:\n        attempt(); print('CHANGED')\n"
        "    except OSError as error:\n        print('denied', error)\n"
        "subprocess.run(['git', 'branch', 'evil-branch'])\n"
        "open('file.txt', 'w').write('two\\n')\n"
    )
    policy = layout.policy(**{grant: (layout.workspace / ".git",)})
    result = python_in_fence(policy, script)
    assert "CHANGED" not in result.stdout, result.stdout
    assert git("rev-parse", "main") == head
    assert git("for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert (layout.workspace / "file.txt").read_text() == "two\n"


def test_unix_sockets_on_the_host_are_unreachable(fence, layout, python_in_fence):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = layout.outside / "daemon.sock"
    listener.bind(str(path))
    listener.listen(4)
    listener.setblocking(False)
    script = (
        "import socket\n"
        f"for path in [{str(path)!r}, '/var/run/docker.sock', '/run/containerd/containerd.sock']:\n"
        "    try:\n"
        "        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path)\n"
        "        s.sendall(b'GET /containers/json HTTP/1.0\\r\\n\\r\\n')\n"
        "        print('CONNECTED', path)\n"
        "    except OSError as error:\n        print('denied', error)\n"
    )
    with listener:
        result = python_in_fence(layout.policy(), script)
        assert "CONNECTED" not in result.stdout
        assert _received(listener) is None


def test_signals_to_host_processes_are_refused(fence, layout, python_in_fence):
    victim = subprocess.Popen(["sleep", "60"])
    try:
        script = (
            "import os, signal\n"
            f"for pid in [{victim.pid}, 1]:\n"
            "    try:\n        os.kill(pid, signal.SIGKILL); print('SENT', pid)\n"
            "    except OSError as error:\n        print('denied', error)\n"
        )
        python_in_fence(layout.policy(), script)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_the_attacks_work_without_a_fence(layout, processes_with_marker):
    """Control: the same attack scripts succeed unfenced, so the fenced passes mean something."""
    from sandbox.unfenced import Unfenced

    victim = subprocess.Popen(["sleep", "60"])
    marker = f"{random.randint(10**6, 10**7)}.125"
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    with _listener() as listener, receiver:
        script = (
            "import os, signal, socket, subprocess\n"
            f"open({str(layout.victim)!r}, 'w').write('pwned')\n"
            f"print(open({str(layout.home_secret)!r}).read())\n"
            f"os.kill({victim.pid}, signal.SIGKILL)\n"
            f"subprocess.Popen(['setsid', 'sleep', {marker!r}])\n"
            "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"u.sendto(b'udp', ('127.0.0.1', {receiver.getsockname()[1]}))\n"
        ) + _connect_script(listener.getsockname()[1])
        result = Unfenced().run([sys.executable, "-c", script], layout.policy())
        assert result.returncode == 0, result.stderr
        assert layout.victim.read_text() == "pwned"
        assert "home-secret-4419" in result.stdout
        assert victim.wait(timeout=10) == -9
        assert _received(listener) == b"leak"
        receiver.settimeout(10)
        assert receiver.recv(10) == b"udp"
        survivors = processes_with_marker(marker)
        assert survivors, "unfenced, a setsid descendant outlives the command"
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)


def labelled_containers_mentioning(marker: str) -> list[str]:
    """Containers of this project (running or not) whose command line contains marker."""
    import docker

    client = docker.from_env()
    containers = client.containers.list(all=True, filters={"label": "kernel-controller=1"})
    return [c.id for c in containers if marker in " ".join(c.attrs["Args"] or [])]


@pytest.mark.docker
def test_container_check_sees_a_leftover_container():
    """Control for the removal check: a labelled container left behind is found."""
    import docker

    from sandbox.docker_fence import DockerFence

    marker = f"{random.randint(10**6, 10**7)}.75"
    client = docker.from_env()
    leftover = client.containers.create(
        DockerFence(client)._image(), command=["sleep", marker], labels={"kernel-controller": "1"}
    )
    try:
        assert labelled_containers_mentioning(marker) == [leftover.id]
    finally:
        leftover.remove(force=True)
    assert labelled_containers_mentioning(marker) == []
