"""The same surface through the SDK's async API (e2b 2.34.0,
e2b/sandbox_async/): control plane, commands with streaming and timeouts,
background handles, files in every format, watch and the error classes.
Each check cites the SDK file under site-packages/e2b/ it follows."""

import asyncio
import os
import uuid

import pytest

from e2b import (
    AsyncSandbox,
    CommandExitException,
    SandboxNotFoundException,
    SandboxQuery,
    TimeoutException,
)
from e2b.exceptions import FileNotFoundException
from e2b.sandbox.filesystem.watch_handle import FilesystemEventType


async def test_async_control_plane(fake):
    # sandbox_async/main.py create/get_info/set_timeout/kill;
    # sandbox_async/sandbox_api.py: 404 -> SandboxNotFoundException.
    tag = uuid.uuid4().hex
    s = await AsyncSandbox.create(metadata={"tag": tag})
    info = await s.get_info()
    assert info.metadata == {"tag": tag}
    pager = AsyncSandbox.list(query=SandboxQuery(metadata={"tag": tag}))
    assert [x.sandbox_id for x in await pager.next_items()] == [s.sandbox_id]
    await s.set_timeout(60)
    again = await AsyncSandbox.connect(s.sandbox_id)
    assert (await again.commands.run("echo ok")).stdout == "ok\n"
    assert await s.kill() is True
    with pytest.raises(SandboxNotFoundException):
        await AsyncSandbox.get_info(s.sandbox_id)
    assert await s.is_running() is False


@pytest.fixture
async def asbx(fake):
    s = await AsyncSandbox.create()
    yield s
    await s.kill()


async def test_async_commands(asbx):
    # sandbox_async/commands/command.py run(on_stdout, on_stderr) and
    # command_handle.py wait(): CommandExitException for exit != 0.
    out, err = [], []
    r = await asbx.commands.run("echo a; echo b >&2", on_stdout=out.append, on_stderr=err.append)
    assert (r.stdout, r.stderr, "".join(out), "".join(err)) == ("a\n", "b\n", "a\n", "b\n")
    with pytest.raises(CommandExitException) as e:
        await asbx.commands.run("exit 7")
    assert e.value.exit_code == 7


async def test_async_timeout(asbx):
    # Connect-Timeout-Ms -> deadline_exceeded (infra process/start.go) ->
    # TimeoutException (envd/rpc.py), every time.
    for _ in range(5):
        with pytest.raises(TimeoutException):
            await asbx.commands.run("sleep 30", timeout=0.3)


async def test_async_background(asbx):
    # run(background=True) returns AsyncCommandHandle; kill() -> True; wait()
    # then raises CommandExitException with exit -1 (envd reports the signal).
    h = await asbx.commands.run("sleep 30", background=True)
    assert h.pid in [p.pid for p in await asbx.commands.list()]
    assert await h.kill() is True
    with pytest.raises(CommandExitException) as e:
        await h.wait()
    assert e.value.exit_code == -1


async def test_async_files(asbx):
    # sandbox_async/filesystem/filesystem.py read formats text/bytes/stream.
    d = f"/home/user/a-{uuid.uuid4().hex[:8]}"
    data = os.urandom(100_000)
    await asbx.files.write(f"{d}/t.txt", "text")
    await asbx.files.write(f"{d}/b.bin", data)
    assert await asbx.files.read(f"{d}/t.txt") == "text"
    assert bytes(await asbx.files.read(f"{d}/b.bin", format="bytes")) == data
    chunks = [c async for c in await asbx.files.read(f"{d}/b.bin", format="stream")]
    assert b"".join(chunks) == data
    assert [e.name for e in await asbx.files.list(d)] == ["b.bin", "t.txt"]
    with pytest.raises(FileNotFoundException):
        await asbx.files.read(f"{d}/missing")


async def test_async_watch(asbx):
    # sandbox_async/filesystem/filesystem.py watch_dir streams WatchDir events
    # to on_event (infra envd services/filesystem/watch.go).
    d = f"/home/user/w-{uuid.uuid4().hex[:8]}"
    await asbx.files.make_dir(d)
    got = asyncio.Queue()
    w = await asbx.files.watch_dir(d, on_event=got.put_nowait)
    try:
        await asbx.files.write(f"{d}/n.txt", "x")
        ev = await asyncio.wait_for(got.get(), 60)
        assert (ev.name, ev.type) == ("n.txt", FilesystemEventType.CREATE)
    finally:
        await w.stop()
