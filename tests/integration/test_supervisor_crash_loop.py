"""A program in a crash loop under a real supervisord: backed off, FATAL, then started again (ADR-013).

The listener is killed during the first cool-down: the revival must not depend on it surviving.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xmlrpc.client

import pytest
from supervisor.xmlrpc import SupervisorTransport

from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import supervisor_conf  # noqa: E402  (a sibling script, not a package)

pytestmark = pytest.mark.slow


def test_a_crash_loop_backs_off_goes_fatal_and_is_started_again_by_the_listener(tmp_path, db):
    config = tmp_path / "supervisord.conf"
    # startsecs is far above how long the program lives, so it never counts as started (RUNNING), even
    # when a loaded machine takes more than a second to start Python (seen once in CI with startsecs=1).
    config.write_text(f"""[supervisord]
nodaemon=true
logfile={tmp_path}/supervisord.log
pidfile={tmp_path}/supervisord.pid
childlogdir={tmp_path}
silent=true
[unix_http_server]
file={tmp_path}/s.sock
[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface
[program:crashy]
command={sys.executable} -c "import sys; sys.exit(3)"
startsecs=10
startretries=1
[eventlistener:process_events]
command={sys.executable} -m jobs.process_events --fatal-retry-s 2
directory={ROOT}
events={",".join(supervisor_conf.LISTENER_EVENTS)}
""")
    rpc = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=SupervisorTransport(None, None, f"unix://{tmp_path}/s.sock"))
    supervisord = subprocess.Popen([sys.executable, "-m", "supervisor.supervisord", "-c", str(config)], cwd=ROOT)
    listener_killed = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with db.reading() as conn:
                kinds = [
                    r["kind"]
                    for r in conn.execute("SELECT kind FROM process_event WHERE program = 'crashy' ORDER BY id").fetchall()
                ]
            if "fatal" in kinds and not listener_killed:
                os.kill(rpc.supervisor.getProcessInfo("process_events:process_events")["pid"], signal.SIGKILL)
                listener_killed = True
            if kinds.count("revived") >= 2:
                break
            time.sleep(0.2)
    finally:
        rpc("close")()  # the XML-RPC socket
        supervisord.terminate()
        supervisord.wait(timeout=15)
    # Each cycle: quick deaths backed off, then FATAL, then started again after the cool-down.
    assert kinds[:3] == ["backoff", "backoff", "fatal"], kinds
    assert kinds.count("revived") >= 2 and kinds.count("fatal") >= 2, kinds
    assert kinds.index("revived") == 3, kinds
    assert listener_killed
