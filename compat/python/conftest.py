"""Fixtures of the Python compatibility checks: they start the sandboxkit
binary named by SANDBOXKIT_BIN (the Go test builds it) as a fake provider on
loopback, point the official E2B Python SDK at it through the four E2B_*
variables the SDK reads (e2b/connection_config.py), and stop it at the end."""

import os
import re
import subprocess
import threading

import pytest

from e2b import Sandbox

_ENV_LINE = re.compile(r"^(E2B_[A-Z_]+)=(.*)$")
_NEEDED = ("E2B_API_URL", "E2B_API_KEY", "E2B_DOMAIN", "E2B_SANDBOX_URL")


# SANDBOXKIT_COMPAT_EXEC=namespace runs every sandbox as real Linux
# processes (`fake-provider --exec namespace`, root only); unset, the
# in-memory default. compat/namespace_test.go sets it for its namespace run.
EXEC_MODE = os.environ.get("SANDBOXKIT_COMPAT_EXEC", "")


def skip_in_namespace(reason):
    """Skips a check that does not apply to the namespace backend: each
    reason is a difference listed in fakeprovider/doc.go, "Backends"."""
    return pytest.mark.skipif(EXEC_MODE == "namespace", reason="namespace backend: " + reason)


def start_fake(*args):
    """Starts `sandboxkit fake-provider` and returns (process, env) once it
    has printed the environment that points an SDK at it."""
    binary = os.environ.get("SANDBOXKIT_BIN")
    if not binary:
        pytest.fail("SANDBOXKIT_BIN is not set: run these checks through `go test ./compat -run TestPythonSDK` (see compat/python/README.md)")
    exec_args = ["--exec", EXEC_MODE] if EXEC_MODE else []
    proc = subprocess.Popen(
        [binary, "fake-provider", "--addr", "127.0.0.1:0", *exec_args, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    env = {}
    for line in proc.stdout:
        m = _ENV_LINE.match(line.strip())
        if m:
            env[m.group(1)] = m.group(2)
        if all(k in env for k in _NEEDED):
            break
    else:
        proc.wait(timeout=10)
        pytest.fail(f"fake-provider exited with {proc.returncode} before it was ready: {proc.stderr.read()}")
    # Keep reading so that a full pipe never blocks the fake.
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, env


@pytest.fixture(scope="session")
def fake():
    """One fake provider for the session; the SDK reads its E2B_* variables."""
    proc, env = start_fake()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    os.environ.pop("E2B_DEBUG", None)
    yield env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def sbx(fake):
    """A sandbox shared by the checks of one module."""
    s = Sandbox.create()
    yield s
    try:
        s.kill()
    except Exception:
        pass
