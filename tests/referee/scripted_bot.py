"""A protocol-v1 bot whose misbehaviour is chosen on its command line (test fixture).

Usage: python3 bot.py MODE [AFTER]   MODE one of: good, timeout, crash, malformed,
illegal, badschema, wrong-protocol, silent-init, late, option, flood-stderr.
The fault happens at decision number AFTER (default 1) of the session.
"""

import json
import random
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
after = int(sys.argv[2]) if len(sys.argv) > 2 else 1
rng = random.Random(0)
count = 0


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for raw in sys.stdin:
    msg = json.loads(raw)
    kind = msg.get("type")
    if kind == "hello":
        if mode == "silent-init":
            time.sleep(60)
        send({"type": "ready", "protocol": 99 if mode == "wrong-protocol" else 1, "name": mode})
    elif kind == "decide":
        count += 1
        options = msg["options"]
        if count == after:
            if mode == "timeout":
                time.sleep(60)
            elif mode == "crash":
                sys.exit(3)
            elif mode == "malformed":
                sys.stdout.write("this is not json\n")
                sys.stdout.flush()
                continue
            elif mode == "illegal":
                send({"type": "move", "id": msg["id"], "index": len(options) + 5})
                continue
            elif mode == "badschema":
                send({"type": "move", "id": msg["id"], "index": "three"})
                continue
            elif mode == "late":
                time.sleep(msg["time_left_ms"] / 1000 + 0.3)
        if mode == "flood-stderr" and count == 1:
            sys.stderr.write("x" * 5_000_000)
            sys.stderr.flush()
        if mode == "option":
            send({"type": "move", "id": msg["id"], "option": rng.choice(options), "extra": 1})
        else:
            send({"type": "move", "id": msg["id"], "index": rng.randrange(len(options))})
    elif kind == "quit":
        break
