"""The ladder process stops on SIGTERM however many come, however close together.

A killed server's ladder process gets a SIGTERM as each of the server's threads exits
(the parent-death signal). Its handler once set the Event the main thread was waiting
on: a second SIGTERM inside the first one's handler, which held that Event's lock,
waited for ever: 0 to 4 times in 30 here with two busy threads beside it, as the
machine's load had it, and 1 kill -9 in 5 of the end-to-end test. The main loop runs
here as in the ladder process, with threads holding the interpreter lock as the ladder's
do, under bursts of SIGTERMs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

MAIN_LOOP = """
import sys
import threading
from arena.server.ladder_process import Terminated, wait_for_stop

def busy():  # bytecode, not one C call: hands the interpreter lock over as threads do
    n = 0
    while True:
        n += 1

for _ in range(2):
    threading.Thread(target=busy, daemon=True).start()
terminated = Terminated()
print("ready", flush=True)
wait_for_stop(terminated, threading.Event(), None)
print("stopped", flush=True)
sys.stdin.read()  # until the burst is over (the next SIGTERM would end us by default)
"""


@pytest.mark.slow
def test_bursts_of_sigterms_stop_the_main_loop_every_time() -> None:
    hung = 0
    for _ in range(20):
        child = subprocess.Popen(
            [sys.executable, "-c", MAIN_LOOP],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n"
        time.sleep(0.05)  # into wait_for_stop's Event.wait
        for _ in range(5000):  # back to back
            os.kill(child.pid, signal.SIGTERM)
        try:
            out, _ = child.communicate("", timeout=10)
        except subprocess.TimeoutExpired:
            hung += 1
            child.kill()
            child.communicate()
            continue
        assert (child.returncode, out) == (0, "stopped\n")
    assert hung == 0, f"{hung} of 20 main loops did not stop on SIGTERM"
