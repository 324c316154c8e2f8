"""sandbox.commands of the official E2B Python SDK (e2b 2.34.0, sync)
against the fake's envd. Each check cites the SDK file under
site-packages/e2b/ or the envd file (e2b-dev/infra packages/envd) it follows."""

import time

import pytest

from e2b import CommandExitException, Sandbox, TimeoutException
from e2b.exceptions import InvalidArgumentException


def test_run_returns_stdout_stderr_exit_code(sbx):
    # sandbox_sync/commands/command.py run() = start + wait();
    # sandbox_sync/commands/command_handle.py wait() returns CommandResult.
    r = sbx.commands.run("echo out; echo err >&2")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "out\n", "err\n")


def test_envs_and_cwd(sbx):
    # command.py sends envs and cwd in ProcessConfig; envd applies them
    # (infra packages/envd/internal/services/process/handler/handler.go cmd.Env, cmd.Dir).
    r = sbx.commands.run('echo "$GREETING"; pwd', envs={"GREETING": "hi there"}, cwd="/tmp")
    assert r.stdout == "hi there\n/tmp\n"


def test_environment_as_envd_sets_it(fake):
    # envd exports E2B_SANDBOX (main.go), E2B_SANDBOX_ID and E2B_TEMPLATE_ID
    # (internal/host/mmds.go) and the create request's envVars (/init).
    s = Sandbox.create(envs={"FROM_CREATE": "yes"})
    try:
        r = s.commands.run('echo "$FROM_CREATE $E2B_SANDBOX $E2B_SANDBOX_ID $E2B_TEMPLATE_ID"')
        assert r.stdout == f"yes true {s.sandbox_id} {s.get_info().template_id}\n"
        assert s.files.read("/run/e2b/.E2B_SANDBOX_ID") == s.sandbox_id
    finally:
        s.kill()


def test_streaming_callbacks(sbx):
    # command_handle.py wait(on_stdout, on_stderr): called with each decoded chunk.
    out, err = [], []
    r = sbx.commands.run("echo a; echo b >&2; echo c", on_stdout=out.append, on_stderr=err.append)
    assert "".join(out) == "a\nc\n"
    assert "".join(err) == "b\n"
    assert r.stdout == "".join(out)


def test_output_arrives_while_running(sbx):
    # envd sends a data event per read of the pipe (handler.go); the SDK
    # yields it as it arrives (command_handle.py __iter__), before the end.
    h = sbx.commands.run("echo first; sleep 30", background=True)
    try:
        for stdout, _, _ in h:
            if stdout:
                assert stdout == "first\n"
                break
    finally:
        assert h.kill() is True


def test_nonzero_exit_raises_command_exit_exception(sbx):
    # command_handle.py wait(): exit_code != 0 -> CommandExitException(stdout, stderr, exit_code).
    with pytest.raises(CommandExitException) as e:
        sbx.commands.run("echo partial; echo bad >&2; exit 3")
    assert (e.value.exit_code, e.value.stdout, e.value.stderr) == (3, "partial\n", "bad\n")


@pytest.mark.parametrize("attempt", range(5))
def test_timeout_raises_timeout_exception(sbx, attempt):
    # command.py passes timeout as Connect-Timeout-Ms; envd ends the stream with
    # deadline_exceeded (infra process/start.go), which envd/rpc.py maps to
    # TimeoutException. Repeated: the answer must not depend on which timer fires first.
    with pytest.raises(TimeoutException):
        sbx.commands.run("sleep 30", timeout=0.3)


def test_background_handle_list_connect_kill(sbx):
    # command.py run(background=True) returns a CommandHandle with pid;
    # list() reads Process/List; connect(pid) streams the same process;
    # kill(pid) sends SIGKILL and returns True, False once it is gone (NotFound).
    h = sbx.commands.run("sleep 30; echo never", background=True)
    pids = [p.pid for p in sbx.commands.list()]
    assert h.pid in pids
    again = sbx.commands.connect(h.pid)
    assert again.pid == h.pid
    assert sbx.commands.kill(h.pid) is True
    with pytest.raises(CommandExitException) as e:
        h.wait()
    # envd reports a signalled process as exit -1 "signal: killed" (handler.go).
    assert e.value.exit_code == -1
    assert "killed" in (e.value.error or "")
    assert sbx.commands.kill(h.pid) is False


def test_stdin(sbx):
    # command.py send_stdin / close_stdin (envd >= 0.5.2, envd/versions.py).
    h = sbx.commands.run("cat", background=True, stdin=True)
    sbx.commands.send_stdin(h.pid, "hello\n")
    sbx.commands.close_stdin(h.pid)
    assert h.wait().stdout == "hello\n"


def test_bad_cwd_is_invalid_argument(sbx):
    # envd handler.go: a cwd that does not exist -> invalid_argument;
    # envd/rpc.py maps it to InvalidArgumentException.
    with pytest.raises(InvalidArgumentException):
        sbx.commands.run("pwd", cwd="/no/such/dir")


def test_user_root(sbx):
    # connection_config.py user= -> Authorization: Basic base64("root:"); envd
    # runs the command as that user (internal/permissions/authenticate.go).
    r = sbx.commands.run("whoami; echo $HOME", user="root")
    assert r.stdout == "root\n/root\n"


def test_command_on_killed_sandbox(fake):
    # A killed sandbox's envd answers 502 at the edge; envd/api.py maps 502
    # to the sandbox-timeout TimeoutException.
    s = Sandbox.create()
    s.kill()
    t0 = time.monotonic()
    with pytest.raises(TimeoutException):
        s.commands.run("echo hi")
    assert time.monotonic() - t0 < 60


def test_job_control_exit_codes(sbx):
    # bash: a command ended by a signal exits 128 + the signal; `wait $!`
    # returns it. sandbox_sync/commands/command_handle.py wait() then raises
    # CommandExitException with that exit code.
    with pytest.raises(CommandExitException) as e:
        sbx.commands.run("sleep 30 & kill -9 $!; wait $!")
    assert e.value.exit_code == 137
    r = sbx.commands.run('sleep 30 & kill %1; wait %1; echo "status $?"; jobs')
    assert r.stdout == "status 143\n"


def test_kill_reaches_a_background_command(sbx):
    # command.py run(background=True) gives the PID envd reports; `kill PID`
    # from another command signals that process as Linux does.
    h = sbx.commands.run("sleep 30", background=True)
    sbx.commands.run(f"kill -9 {h.pid}")
    with pytest.raises(CommandExitException) as e:
        h.wait()
    assert e.value.exit_code == -1


def test_permissions_as_user_and_root(sbx):
    # envd starts each process with the requested user's uid/gid (infra
    # packages/envd/internal/services/process/handler/handler.go
    # SysProcAttr.Credential), so the kernel's permission checks apply:
    # user cannot write into /root (drwx------ root root).
    with pytest.raises(CommandExitException) as e:
        sbx.commands.run("echo hi > /root/denied")
    assert e.value.exit_code == 1
    # bash: "bash: line 1: /root/denied: Permission denied" (5.1+).
    assert "/root/denied: Permission denied" in e.value.stderr
    r = sbx.commands.run("echo hi > /root/allowed && cat /root/allowed && stat -c '%U %a' /root", user="root")
    assert r.stdout == "hi\nroot 700\n"


def test_envd_file_operations_run_as_root(sbx):
    # envd itself runs as root: /files and the filesystem RPCs are not
    # limited by the user's permissions; what they create is chowned to the
    # user (infra packages/envd/internal/api/upload.go processFile,
    # internal/permissions/path.go EnsureDirs). The user's own commands
    # still cannot reach into /root.
    sbx.files.write("/root/sdk/uploaded.txt", "by envd", user="user")
    info = sbx.files.get_info("/root/sdk/uploaded.txt", user="user")
    assert (info.owner, info.group) == ("user", "user")
    assert sbx.files.read("/root/sdk/uploaded.txt", user="user") == "by envd"
    with pytest.raises(CommandExitException):
        sbx.commands.run("cat /root/sdk/uploaded.txt")
