#!/usr/bin/env python3
"""python-random: the smallest useful Azul Arena bot (protocol v1).

Reads one JSON message per line on stdin, writes one JSON message per line on
stdout, logs to stderr. Picks a uniformly random option. The generator is seeded
from the game id and seat, so a replayed game gets the same answers.

Standard library only: the sandbox runs /usr/bin/python3 with no pip packages.
"""

from __future__ import annotations

import json
import random
import sys

NAME = "python-random"
PROTOCOL = 1


def log(*parts: object) -> None:
    """Debug output goes to stderr (stdout is reserved for protocol lines)."""
    print(*parts, file=sys.stderr, flush=True)


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def choose(request: dict, rng: random.Random) -> int:
    """Return the index of the chosen option. Put your own logic here."""
    return rng.randrange(len(request["options"]))


def main() -> None:
    rngs: dict[str, random.Random] = {}
    stdin = sys.stdin.buffer  # bytes: UTF-8 regardless of the (cleared) locale
    while True:
        line = stdin.readline()
        if not line:  # EOF: the referee went away
            return
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            log("ignoring a line that is not JSON:", line[:200])
            continue
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if kind == "hello":
            if msg.get("protocol") != PROTOCOL:
                log("referee speaks protocol", msg.get("protocol"), "- we speak", PROTOCOL)
            send({"type": "ready", "protocol": PROTOCOL, "name": NAME, "version": "1"})
        elif kind == "game_start":
            key = f"{msg.get('game_id')}:{msg.get('seat')}"
            rngs[msg.get("game_id")] = random.Random(key)
        elif kind == "decide":
            game_id = msg.get("game_id")
            rng = rngs.get(game_id)
            if rng is None:  # no game_start seen (should not happen): seed anyway
                rng = rngs[game_id] = random.Random(f"{game_id}:{msg.get('seat')}")
            try:
                index = choose(msg, rng)
            except Exception as exc:  # a bug must not kill the bot: play the first option
                log("choose failed:", repr(exc))
                index = 0
            send({"type": "move", "id": msg.get("id"), "index": index})
        elif kind == "game_end":
            rngs.pop(msg.get("game_id"), None)
        elif kind == "quit":
            return
        # any other type: ignore it (forward compatibility)


if __name__ == "__main__":
    main()
