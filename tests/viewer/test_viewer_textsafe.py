"""The replay viewer's script shows bot text under arena/textsafe.py's rule (issue 22):
its ``visible`` gives what Python's gives, for Trojan-Source strings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib import resources

import pytest

from arena.textsafe import visible

TROJAN_SOURCE = [
    'access_level != \u202e\u2066// Check if admin\u2069\u2066 "user"',
    "c-greedy\u200b c\u200dgreedy\u200c \ufeffpython-greedy",
    "admin\U000e0061\U000e0064 line\u2028break\u2029para soft\u00adhyphen \u061c",
]

# Evaluates the script's ``visible`` (between its rule and ``function el``) on JSON input.
RUNNER = """
const src = require("fs").readFileSync(process.argv[1], "utf8");
const body = src.slice(src.indexOf("  var UNSAFE"), src.indexOf("  function el("));
const visible = new Function(body + "; return visible;")();
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(texts.map(visible)));
"""


def test_the_viewer_script_neutralises_what_python_does() -> None:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("ARENA_REQUIRE_TOOLCHAINS") == "1":
            pytest.fail("node is not installed (ARENA_REQUIRE_TOOLCHAINS=1)")
        pytest.skip("node is not installed")
    script = resources.files("arena.viewer").joinpath("static", "viewer.js")
    texts = [*TROJAN_SOURCE, "stderr\x1b[2J\x9b31m", "tail\nwith\ttabs\r"]
    run = subprocess.run(
        [node, "-e", RUNNER, str(script)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(run.stdout) == [visible(t, multiline=True) for t in texts]
