#!/usr/bin/env node
// js-random: a minimal Azul Arena bot (protocol v1) for Node.js, no npm packages.
//
// Reads one JSON message per line on stdin, writes one JSON message per line on
// stdout, logs to stderr. Picks a uniformly random option with a small PRNG
// seeded from the game id and seat, so a replayed game gets the same answers.
"use strict";

const readline = require("readline");

const NAME = "js-random";
const PROTOCOL = 1;

function log(...parts) {
  process.stderr.write(parts.join(" ") + "\n"); // stdout is for protocol lines only
}

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

// mulberry32, seeded with a 32-bit FNV-1a hash of a string.
function seededRandom(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  let a = h;
  return function () {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Return the index of the chosen option. Put your own logic here.
function choose(request, random) {
  return Math.floor(random() * request.options.length);
}

const rngs = new Map(); // game_id -> random()

function handle(msg) {
  switch (msg.type) {
    case "hello":
      if (msg.protocol !== PROTOCOL) log("referee speaks protocol", msg.protocol, "- we speak", PROTOCOL);
      send({ type: "ready", protocol: PROTOCOL, name: NAME, version: "1" });
      break;
    case "game_start":
      rngs.set(msg.game_id, seededRandom(`${msg.game_id}:${msg.seat}`));
      break;
    case "decide": {
      let random = rngs.get(msg.game_id);
      if (!random) {
        random = seededRandom(`${msg.game_id}:${msg.seat}`);
        rngs.set(msg.game_id, random);
      }
      let index = 0;
      try {
        index = choose(msg, random);
      } catch (err) {
        log("choose failed:", err); // a bug must not kill the bot: play the first option
      }
      send({ type: "move", id: msg.id, index: index });
      break;
    }
    case "game_end":
      rngs.delete(msg.game_id);
      break;
    case "quit":
      process.exit(0);
    default:
      break; // unknown message types are ignored (forward compatibility)
  }
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    log("ignoring a line that is not JSON:", line.slice(0, 200));
    return;
  }
  if (msg !== null && typeof msg === "object") handle(msg);
});
input.on("close", () => process.exit(0)); // EOF: the referee went away
