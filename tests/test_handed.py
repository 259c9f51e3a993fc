"""A server handed to a study on a user's server (logbench.servers.handed): what the committed runs of studies 12 and
13 are made on. Its pure parts (the command's arguments, its exit status, the interrupts by phase) without a server;
then a real throwaway server of each engine running a real command: reached with the connection string it put in
place of SERVER and the password it put in the environment only, and gone afterwards, also when the command is
interrupted."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from logbench.base import paths
from logbench.base.errors import ParameterError
from logbench.servers import handed

from conftest import needs_root


# -- no server -------------------------------------------------------------------------------------------

def test_the_server_is_put_where_the_command_names_it():
    document = json.dumps({"profile": "standard", "server": handed.SERVER, "confirm": True})
    argv = ["python", "-m", "papermill", "in.ipynb", "out.ipynb", "-y", document, "-p", "server", handed.SERVER]
    spec = "host=127.0.0.1 port=40000 user=postgres dbname=postgres"
    got = handed.command_for(argv, spec)
    assert json.loads(got[6])["server"] == spec and got[-1] == spec
    assert got[:6] == argv[:6] and handed.SERVER not in " ".join(got)


def test_the_placeholder_defines_on_both_studies_and_names_no_host_that_resolves():
    import socket

    from logbench.servers.own_mariadb import Server
    from logbench.servers.own_postgres import Dsn

    assert Dsn(handed.SERVER).as_dict() == {"host": "handed-server.invalid"}
    assert Server(handed.SERVER).as_dict() == {"host": "handed-server.invalid"}
    with pytest.raises(OSError):
        socket.getaddrinfo("handed-server.invalid", 5432)


def test_exit_status_as_a_shell_says_it():
    assert handed.status(0, None) == 0
    assert handed.status(3, None) == 3
    assert handed.status(-signal.SIGTERM, None) == 128 + signal.SIGTERM
    assert handed.status(-signal.SIGKILL, signal.SIGINT) == 128 + signal.SIGKILL
    # an interrupted command is never a success, whatever it returned; a failure keeps its own status
    assert handed.status(0, signal.SIGINT) == 128 + signal.SIGINT
    assert handed.status(1, signal.SIGTERM) == 1


def test_interrupts_by_phase():
    starting = handed.Interrupts()
    with pytest.raises(KeyboardInterrupt):
        starting(signal.SIGTERM, None)
    starting(signal.SIGINT, None)  # a second one, while the start is being undone: noted only
    assert starting.received == [signal.SIGTERM, signal.SIGINT] and starting.first == signal.SIGTERM

    running, passed = handed.Interrupts(), []
    running.forward = passed.append
    running(signal.SIGINT, None)
    running(signal.SIGINT, None)  # papermill's kernel manager follows up; the command was told once
    running(signal.SIGTERM, None)
    assert passed == [signal.SIGINT]


def test_an_interrupted_command_gets_its_grace_then_is_killed_with_its_session():
    # a real process that ignores the interrupt, and a child of it in its session
    child = subprocess.Popen([sys.executable, "-c", "import signal, subprocess, time; "
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                              "p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    grandchild = int(child.stdout.readline())
    interrupts = handed.Interrupts()
    interrupts.passed_on = signal.SIGTERM
    t0 = time.monotonic()
    assert handed._wait(child, interrupts, grace=1.0) == -signal.SIGKILL
    assert 0.9 < time.monotonic() - t0 < 10
    deadline = time.monotonic() + 5
    while Path(f"/proc/{grandchild}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    status = Path(f"/proc/{grandchild}/stat").read_text().split()[2] if Path(f"/proc/{grandchild}").exists() else "gone"
    assert status in ("gone", "Z"), status  # killed (a zombie until its parent's parent reaps it)


def test_no_command_or_engine_is_refused_before_anything_starts():
    with pytest.raises(ParameterError, match="'command'"):
        handed.run("postgresql", [])
    with pytest.raises(ParameterError, match="'engine'.*postgresql, mariadb"):
        handed.handed("oracle")


# -- a real server ---------------------------------------------------------------------------------------------

# What the command checks: it reaches the server by the string it was given, with the password from the
# environment, and says where the server's files are (so the test can see they are gone).
PROBE = {
    "postgresql": """
import os, sys, psycopg
assert "password" not in sys.argv[1] and os.environ["PGPASSWORD"]
with psycopg.connect(sys.argv[1]) as c:
    print(c.execute("SHOW data_directory").fetchone()[0], flush=True)
""",
    "mariadb": """
import os, shlex, sys, pymysql
assert "password" not in sys.argv[1] and os.environ["MYSQL_PWD"]
kw = dict(w.split("=", 1) for w in shlex.split(sys.argv[1]))
c = pymysql.connect(host=kw["host"], port=int(kw["port"]), user=kw["user"], password=os.environ["MYSQL_PWD"])
with c.cursor() as cur:
    cur.execute("SELECT @@datadir")
    print(cur.fetchone()[0], flush=True)
c.close()
""",
}


# After PROBE: what a study does when interrupted (runner.terminate_as_interrupt): SIGINT or SIGTERM as a
# KeyboardInterrupt, a second left alone, a second of restoring, then its failure; "waiting" once it is ready.
WAIT_TO_BE_INTERRUPTED = """
import signal, time

def interrupted(signum, frame):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, interrupted)
signal.signal(signal.SIGTERM, interrupted)
try:
    print("waiting", flush=True)
    time.sleep(120)
except KeyboardInterrupt:
    time.sleep(1)
    print("restored", flush=True)
    raise SystemExit(130)
"""


def handed_command(engine: str, *command: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib")}
    env.pop("PGPASSWORD", None)
    env.pop("MYSQL_PWD", None)
    return subprocess.Popen([sys.executable, "-m", "logbench.servers.handed", engine, "--", *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw)


@pytest.mark.integration
@needs_root
@pytest.mark.parametrize("engine", handed.ENGINES)
def test_a_command_reaches_the_handed_server_which_is_gone_after(engine):
    p = handed_command(engine, sys.executable, "-c", PROBE[engine], handed.SERVER)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    datadir = Path(out.strip().splitlines()[-1])
    assert "logbench-" in str(datadir), datadir
    assert not datadir.exists(), f"{datadir} left behind"
    assert "the command ended (0)" in err and "stopping and removing the server" in err


@pytest.mark.integration
@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_is_passed_on_and_the_server_removed(sig):
    # the command prints the data directory, then waits to be interrupted; it takes 1 s to end, as a study restores
    command = PROBE["postgresql"] + WAIT_TO_BE_INTERRUPTED
    p = handed_command("postgresql", sys.executable, "-c", command, handed.SERVER)
    datadir = Path(p.stdout.readline().strip())
    assert datadir.exists()
    # signalled once its handlers are in place (a loaded machine takes its time between the two lines)
    assert p.stdout.readline().strip() == "waiting"
    p.send_signal(sig)
    out, err = p.communicate(timeout=300)
    assert "restored" in out, err  # the command had its time to end
    assert p.returncode == 130, err
    assert f"signal {int(sig)} passed on" in err
    assert not datadir.exists(), f"{datadir} left behind"
