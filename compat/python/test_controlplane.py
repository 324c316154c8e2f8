"""The control plane through the official E2B Python SDK (e2b 2.34.0, sync).
Each check cites the SDK file under site-packages/e2b/ whose behaviour it
relies on, or the e2b-dev/infra file that says what the platform answers."""

import datetime
import uuid

import pytest

from conftest import skip_in_namespace
from e2b import (
    AuthenticationException,
    Sandbox,
    SandboxException,
    SandboxNotFoundException,
    SandboxQuery,
    SandboxState,
)


def test_create_then_get_info(fake):
    # sandbox_sync/main.py create() posts /sandboxes with the default template
    # "base" and metadata (sandbox/main.py default_template); get_info reads
    # GET /sandboxes/{id} into SandboxInfo (sandbox/sandbox_api.py:469).
    tag = uuid.uuid4().hex
    s = Sandbox.create(metadata={"tag": tag}, timeout=120)
    try:
        info = s.get_info()
        assert info.sandbox_id == s.sandbox_id
        assert info.metadata == {"tag": tag}
        assert info.state == SandboxState.RUNNING
        assert info.template_id  # the build of "base", an ID, not the alias
        assert info.end_at > info.started_at
        # timeout=120 s: infra handlers/sandbox_create.go sets endAt = startedAt + timeout.
        assert abs((info.end_at - info.started_at).total_seconds() - 120) < 2
        assert info.envd_version
        assert s.is_running()
    finally:
        s.kill()


def test_list_filters_by_metadata(fake):
    # sandbox_sync/paginator.py: GET /v2/sandboxes?metadata=..., next_items()
    # returns a page, has_next follows X-Next-Token.
    tag = uuid.uuid4().hex
    mine = [Sandbox.create(metadata={"tag": tag, "n": str(i)}) for i in range(3)]
    other = Sandbox.create(metadata={"tag": "other"})
    try:
        pager = Sandbox.list(query=SandboxQuery(metadata={"tag": tag}), limit=2)
        seen = []
        while pager.has_next:
            seen.extend(pager.next_items())
        assert sorted(x.sandbox_id for x in seen) == sorted(x.sandbox_id for x in mine)
        assert all(x.metadata["tag"] == tag for x in seen)
    finally:
        for s in mine + [other]:
            s.kill()


def test_set_timeout_moves_end_at(fake):
    # sandbox_sync/main.py set_timeout posts /sandboxes/{id}/timeout; the
    # platform sets endAt = now + timeout, shortening too
    # (infra handlers/sandbox_timeout.go).
    s = Sandbox.create(timeout=300)
    try:
        before = s.get_info().end_at
        s.set_timeout(30)
        after = s.get_info().end_at
        assert after < before
        now = datetime.datetime.now(datetime.timezone.utc)
        assert 0 < (after - now).total_seconds() <= 31
    finally:
        s.kill()


def test_kill_then_gone(fake):
    # sandbox_sync/sandbox_api.py _cls_kill: 204 -> True, 404 -> False;
    # _cls_get_info and _cls_set_timeout: 404 -> SandboxNotFoundException.
    s = Sandbox.create()
    assert s.kill() is True
    assert Sandbox.kill(s.sandbox_id) is False
    with pytest.raises(SandboxNotFoundException):
        Sandbox.get_info(s.sandbox_id)
    with pytest.raises(SandboxNotFoundException):
        Sandbox.set_timeout(s.sandbox_id, 30)
    # sandbox_sync/main.py is_running: envd's /health through the edge
    # answers 502 for a sandbox that is gone (infra client-proxy).
    assert s.is_running() is False


def test_connect_returns_a_working_sandbox(sbx):
    # sandbox_sync/main.py connect posts /sandboxes/{id}/connect and returns a
    # Sandbox bound to the same envd.
    again = Sandbox.connect(sbx.sandbox_id)
    assert again.sandbox_id == sbx.sandbox_id
    assert again.commands.run("echo connected").stdout == "connected\n"


def test_connect_to_killed_sandbox(fake):
    # sandbox_sync/sandbox_api.py _cls_connect: 404 -> SandboxNotFoundException.
    s = Sandbox.create()
    s.kill()
    with pytest.raises(SandboxNotFoundException):
        Sandbox.connect(s.sandbox_id)


def test_pause_and_resume_keep_files(fake):
    # sandbox_sync/main.py pause posts /sandboxes/{id}/pause; connect resumes
    # (201). A paused sandbox lists as paused (infra handlers/sandbox_pause.go).
    s = Sandbox.create()
    try:
        s.files.write("/home/user/kept.txt", "still here")
        s.pause()
        assert Sandbox.get_info(s.sandbox_id).state == SandboxState.PAUSED
        resumed = Sandbox.connect(s.sandbox_id)
        assert resumed.files.read("/home/user/kept.txt") == "still here"
    finally:
        Sandbox.kill(s.sandbox_id)


def test_wrong_api_key_is_authentication_error(fake):
    # api/__init__.py api_exception_from_code: 401 -> AuthenticationException
    # (infra: every route requires a valid X-API-Key).
    with pytest.raises(AuthenticationException):
        Sandbox.create(api_key="e2b_" + "0" * 40)


def test_unknown_template_is_sandbox_exception(fake):
    # api/__init__.py: any other status -> SandboxException("<code>: <msg>");
    # infra cache/templates/errors.go: 404 "template '<x>' not found".
    with pytest.raises(SandboxException) as e:
        Sandbox.create(template="no-such-template-" + uuid.uuid4().hex[:8])
    assert "404" in str(e.value)
    assert "not found" in str(e.value)


def test_template_exists(fake):
    # template_sync/main.py exists -> build_api.py check_alias_exists: GET
    # /templates/aliases/{alias}; 403 (another team's public template, infra
    # handlers/template_alias.go) -> True, 404 -> False. "base" is the SDK's
    # default template (sandbox/main.py) and E2B's, not the account's.
    from e2b import Template

    assert Template.exists("base") is True
    assert Template.exists("code-interpreter-v1") is True
    assert Template.exists("no-such-template-" + uuid.uuid4().hex[:8]) is False


@skip_in_namespace("pause keeps the sandbox's processes running, so a resume without memory does not cold-boot it (no new boot_id)")
def test_boot_id_across_pause(fake):
    # sandbox_sync/main.py pause(keep_memory): True (the default) snapshots
    # memory, so the resume continues the same boot; False keeps only the
    # filesystem and "resuming such a sandbox cold-boots (reboots) it from
    # disk, losing running processes". The kernel's boot_id tells them apart.
    s = Sandbox.create()
    path = "/proc/sys/kernel/random/boot_id"
    try:
        first = s.files.read(path)
        assert len(first.strip()) == 36
        s.pause()
        s = Sandbox.connect(s.sandbox_id)
        assert s.files.read(path) == first
        s.files.write("/home/user/disk.txt", "on disk")
        s.pause(keep_memory=False)
        s = Sandbox.connect(s.sandbox_id)
        assert s.files.read(path) != first
        assert s.files.read("/home/user/disk.txt") == "on disk"
    finally:
        Sandbox.kill(s.sandbox_id)
