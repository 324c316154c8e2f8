"""sandbox.files of the official E2B Python SDK (e2b 2.34.0, sync) against
the fake's envd. Each check cites the SDK file under site-packages/e2b/ or
the envd file (e2b-dev/infra packages/envd) it follows."""

import io
import os
import time
import uuid

import pytest

from e2b import FileType, NotFoundException
from e2b.exceptions import FileNotFoundException, InvalidArgumentException
from e2b.sandbox.filesystem.watch_handle import FilesystemEventType


def fresh(sbx):
    d = f"/home/user/f-{uuid.uuid4().hex[:8]}"
    sbx.files.make_dir(d)
    return d


def test_text_round_trip(sbx):
    # sandbox_sync/filesystem/filesystem.py write(str) uploads, read() returns r.text.
    d = fresh(sbx)
    info = sbx.files.write(f"{d}/a.txt", "héllo\nwörld\n")
    assert info.path == f"{d}/a.txt"
    assert info.type == FileType.FILE
    assert sbx.files.read(f"{d}/a.txt") == "héllo\nwörld\n"


def test_bytes_round_trip(sbx):
    # filesystem.py read(format="bytes") returns bytearray(r.content).
    d = fresh(sbx)
    data = bytes(range(256)) * 4
    sbx.files.write(f"{d}/b.bin", data)
    assert bytes(sbx.files.read(f"{d}/b.bin", format="bytes")) == data


def test_stream_round_trip(sbx):
    # write(IO) streams the file object; read(format="stream") returns a
    # FileStreamReader yielding bytes chunks (sandbox/filesystem/filesystem.py).
    d = fresh(sbx)
    data = os.urandom(300_000)
    sbx.files.write(f"{d}/s.bin", io.BytesIO(data))
    got = b"".join(sbx.files.read(f"{d}/s.bin", format="stream"))
    assert got == data


def test_gzip_round_trip(sbx):
    # read(gzip=True) sends Accept-Encoding: gzip; write(gzip=True) sends
    # Content-Encoding: gzip (envd >= 0.5.7; infra envd api/encoding.go).
    d = fresh(sbx)
    sbx.files.write(f"{d}/g.txt", "zipped " * 1000, gzip=True)
    assert sbx.files.read(f"{d}/g.txt", gzip=True) == "zipped " * 1000


def test_write_files_many(sbx):
    # filesystem.py write_files: one request for several entries, returns one WriteInfo each.
    d = fresh(sbx)
    infos = sbx.files.write_files([
        {"path": f"{d}/one.txt", "data": "1"},
        {"path": f"{d}/sub/two.txt", "data": b"2"},
    ])
    assert sorted(i.path for i in infos) == [f"{d}/one.txt", f"{d}/sub/two.txt"]
    assert sbx.files.read(f"{d}/sub/two.txt") == "2"


def test_list_exists_get_info_rename_remove(sbx):
    # ListDir, Stat, Move, Remove RPCs (infra envd services/filesystem/*.go).
    d = fresh(sbx)
    sbx.files.write(f"{d}/x.txt", "12345")
    names = [e.name for e in sbx.files.list(d)]
    assert names == ["x.txt"]
    info = sbx.files.get_info(f"{d}/x.txt")
    assert (info.size, info.type, info.owner, info.group) == (5, FileType.FILE, "user", "user")
    assert info.permissions == "-rw-r--r--"
    assert sbx.files.exists(f"{d}/x.txt")
    moved = sbx.files.rename(f"{d}/x.txt", f"{d}/y.txt")
    assert moved.path == f"{d}/y.txt"
    assert not sbx.files.exists(f"{d}/x.txt")
    sbx.files.remove(f"{d}/y.txt")
    assert not sbx.files.exists(f"{d}/y.txt")
    # MakeDir on an existing directory: already_exists -> False (filesystem.py make_dir).
    assert sbx.files.make_dir(d) is False


def test_metadata(sbx):
    # write(metadata=...) sends X-Metadata-* headers (envd >= 0.6.x, envd/versions.py);
    # get_info returns them as EntryInfo.metadata (infra envd api/upload.go xattrs).
    d = fresh(sbx)
    sbx.files.write(f"{d}/m.txt", "m", metadata={"owner-team": "blue"})
    assert sbx.files.get_info(f"{d}/m.txt").metadata == {"owner-team": "blue"}


def test_missing_file_errors(sbx):
    # filesystem.py: GET /files 404 -> FileNotFoundException (a NotFoundException);
    # Stat not_found -> FileNotFoundException.
    with pytest.raises(FileNotFoundException):
        sbx.files.read("/home/user/no-such-file")
    with pytest.raises(NotFoundException):
        sbx.files.get_info("/home/user/no-such-file")


def test_read_directory_is_invalid_argument(sbx):
    # infra envd api/download.go: a directory -> 400; envd/api.py maps 400 to
    # InvalidArgumentException.
    with pytest.raises(InvalidArgumentException):
        sbx.files.read("/home/user")


def test_watch_dir(sbx):
    # sandbox_sync/filesystem/filesystem.py watch_dir uses CreateWatcher +
    # GetWatcherEvents (polling); events carry name and type
    # (infra envd services/filesystem/watch_sync.go).
    d = fresh(sbx)
    w = sbx.files.watch_dir(d)
    try:
        sbx.files.write(f"{d}/w.txt", "w")
        sbx.files.remove(f"{d}/w.txt")
        # inotify delivers asynchronously: poll until the remove arrives (the
        # bound only keeps a broken daemon from hanging the run).
        events = []
        deadline = time.monotonic() + 60
        while not any(e.type == FilesystemEventType.REMOVE for e in events) and time.monotonic() < deadline:
            events += w.get_new_events()
            time.sleep(0.05)
        kinds = [(e.name, e.type) for e in events]
        assert ("w.txt", FilesystemEventType.CREATE) in kinds
        assert ("w.txt", FilesystemEventType.REMOVE) in kinds
    finally:
        w.stop()
