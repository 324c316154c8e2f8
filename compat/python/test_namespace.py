"""The official E2B Python SDK (e2b 2.34.0) against `sandboxkit fake-provider
--exec namespace`: real python3, pip in a venv, git, and a loopback HTTP
server started in the sandbox and reached from outside through the host the
SDK's get_host names (sandbox/main.py get_host → connection_config.py
get_host: f"{port}-{sandbox_id}.{domain}"). Skipped, with the probe's
reason, where namespace sandboxes cannot start (not Linux, not root, no
overlayfs)."""

import os

import httpx
import pytest

from e2b import Sandbox

from conftest import start_fake


@pytest.fixture(scope="module")
def ns_sbx():
    """A sandbox of a namespace-mode fake started for this module."""
    try:
        proc, env = start_fake("--exec", "namespace")
    except pytest.fail.Exception as e:
        pytest.skip(f"namespace sandboxes unavailable here: {e}")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    s = Sandbox.create()
    yield s, env
    try:
        s.kill()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(timeout=10)


def test_python3_runs(ns_sbx):
    s, _ = ns_sbx
    r = s.commands.run("python3 -c 'import os, sys; print(sys.version_info[0], os.getuid())'")
    assert r.stdout == "3 1000\n"


def test_pip_in_a_venv(ns_sbx):
    s, _ = ns_sbx
    r = s.commands.run("python3 -m venv /home/user/venv && /home/user/venv/bin/python -m pip --version", timeout=120)
    assert r.stdout.startswith("pip ") and "/home/user/venv/" in r.stdout


def test_git_commit_and_clone(ns_sbx):
    s, _ = ns_sbx
    r = s.commands.run(
        "set -e; git init -q /home/user/repo && cd /home/user/repo && echo hi > a.txt && git add a.txt && "
        "git -c user.name=u -c user.email=u@x commit -qm first && git clone -q /home/user/repo /home/user/copy && cat /home/user/copy/a.txt"
    )
    assert r.stdout == "hi\n"


def test_loopback_http_server_through_get_host(ns_sbx):
    s, env = ns_sbx
    s.files.write("/home/user/site/index.html", "<h1>from the sandbox</h1>")
    closed = httpx.get(env["E2B_SANDBOX_URL"] + "/", headers={"Host": s.get_host(8000)})
    # The edge's answer for a port nothing listens on (e2b-dev/infra
    # packages/shared/pkg/proxy/template/port_closed.go).
    assert closed.status_code == 502
    assert closed.json()["message"] == "The sandbox is running but port is not open"
    assert closed.json()["port"] == 8000
    server = s.commands.run("cd /home/user/site && python3 -m http.server 8000", background=True)
    s.commands.run("until python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 8000))' 2>/dev/null; do sleep 0.05; done", timeout=60)
    r = httpx.get(env["E2B_SANDBOX_URL"] + "/index.html", headers={"Host": s.get_host(8000)})
    assert (r.status_code, r.text) == (200, "<h1>from the sandbox</h1>")
    server.kill()
