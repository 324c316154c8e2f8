"""Fork, snapshots and network update through the official E2B Python SDK
(e2b 2.34.0, sync). Each check cites the SDK file under site-packages/e2b/
or the e2b-dev/infra handler that says what the platform answers."""

import uuid

import pytest

from conftest import skip_in_namespace
from e2b import Sandbox, SandboxNotFoundException

# No image of a namespace sandbox's files yet.
no_image = skip_in_namespace("a fork or snapshot starts from the root filesystem, not a copy of its source")


@no_image
def test_fork_copies_the_sandbox(fake):
    # sandbox_sync/main.py fork(timeout, count) -> sandbox_api.py _cls_fork:
    # POST /sandboxes/{id}/fork answers 201 [SandboxForkResult]; each result
    # becomes a Sandbox or an exception. infra handlers/sandbox_fork.go: the
    # source keeps running, its ID and expiration untouched.
    s = Sandbox.create(metadata={"role": "source"})
    try:
        s.files.write("/home/user/state.txt", "before fork")
        end_before = s.get_info().end_at
        forks = s.fork(count=2)
        assert len(forks) == 2
        try:
            for f in forks:
                assert isinstance(f, Sandbox), f
                assert f.sandbox_id != s.sandbox_id
                assert f.files.read("/home/user/state.txt") == "before fork"
                f.files.write("/home/user/state.txt", "changed in " + f.sandbox_id)
            assert s.files.read("/home/user/state.txt") == "before fork"
            assert s.get_info().end_at == end_before
            assert s.is_running()
        finally:
            for f in forks:
                if isinstance(f, Sandbox):
                    f.kill()
    finally:
        s.kill()


def test_fork_of_killed_sandbox_is_not_found(fake):
    # sandbox_api.py _cls_fork: 404 -> SandboxNotFoundException (infra
    # sandbox_fork.go answers 404 for a sandbox that no longer exists).
    s = Sandbox.create()
    s.kill()
    with pytest.raises(SandboxNotFoundException):
        Sandbox.fork(s.sandbox_id)


@no_image
def test_snapshot_create_list_create_from_delete(fake):
    # sandbox_sync/main.py create_snapshot -> POST /sandboxes/{id}/snapshots
    # (201 SnapshotInfo; infra snapshot_template_create.go: snapshotID
    # "<team>/<name>:default" when named); Sandbox.create(snapshot_id)
    # starts from it; list_snapshots pages GET /snapshots; delete_snapshot:
    # DELETE /templates/{id}, 204 -> True, 404 -> False.
    s = Sandbox.create()
    name = "snap-" + uuid.uuid4().hex[:8]
    try:
        s.files.write("/home/user/saved.txt", "in the snapshot")
        snap = s.create_snapshot(name=name)
        assert snap.snapshot_id.endswith("/" + name + ":default")
        assert len(snap.names) == 1 and snap.names[0].endswith("/" + name)
        anon = s.create_snapshot()
        assert anon.snapshot_id.endswith(":default") and anon.names == []

        listed = []
        pager = s.list_snapshots(limit=1)
        while pager.has_next:
            listed.extend(x.snapshot_id for x in pager.next_items())
        assert sorted(listed) == sorted([snap.snapshot_id, anon.snapshot_id])

        child = Sandbox.create(snap.snapshot_id)
        try:
            assert child.files.read("/home/user/saved.txt") == "in the snapshot"
        finally:
            child.kill()

        assert Sandbox.delete_snapshot(name) is True
        assert Sandbox.delete_snapshot(name) is False
        assert Sandbox.delete_snapshot(anon.snapshot_id) is True
    finally:
        s.kill()


def test_snapshot_of_killed_sandbox_is_not_found(fake):
    # sandbox_api.py _cls_create_snapshot: 404 -> SandboxNotFoundException.
    s = Sandbox.create()
    s.kill()
    with pytest.raises(SandboxNotFoundException):
        Sandbox.create_snapshot(s.sandbox_id)


def test_update_network(fake):
    # sandbox_sync/main.py update_network -> PUT /sandboxes/{id}/network,
    # 204; the egress rules are replaced as a whole and get_info reports them
    # (infra handlers/sandbox_network_update.go; sandbox/sandbox_api.py
    # SandboxNetworkUpdate).
    s = Sandbox.create(network={"deny_out": ["0.0.0.0/0"]})
    try:
        s.update_network({"allow_out": ["8.8.8.8"]})
        info = s.get_info()
        assert info.network is not None
        assert info.network.get("allow_out") == ["8.8.8.8"]
        assert not info.network.get("deny_out")
    finally:
        s.kill()
    with pytest.raises(SandboxNotFoundException):
        Sandbox.update_network(s.sandbox_id, {"allow_out": ["8.8.8.8"]})
