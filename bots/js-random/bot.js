#!/usr/bin/env node
// js-random: a minimal Azul Arena bot (protocol v1) for Node.js, no npm packages.
//
// Reads one JSON message per line on stdin, writes one JSON message per line on
// stdout, logs to stderr. Picks a uniformly random option with a small PRNG
// seeded from the game id and seat, so a replayed game gets the same answers.
"use strict";

const fs = require("fs");
const { StringDecoder } = require("string_decoder");

const NAME = "js-random";
const PROTOCOL = 1;

function log(...parts) {
  process.stderr.write(parts.join(" ") + "\n"); // stdout is for protocol lines only
}

function send(message) {
  fs.writeSync(1, JSON.stringify(message) + "\n"); // one write, delivered at once
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

// Requests are read with blocking reads: the bot sleeps in one system call until the
// referee writes, with no event loop to wake between requests (readline's events cost
// about twice the CPU time per decision). Lines are split on bytes that are whole
// characters (StringDecoder keeps a character split between two reads).
function* stdinLines() {
  const chunk = Buffer.alloc(1 << 16);
  const decoder = new StringDecoder("utf8");
  const pause = new Int32Array(new SharedArrayBuffer(4));
  let pending = "";
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, chunk, 0, chunk.length, null);
    } catch (err) {
      if (err.code === "EAGAIN") { // a non-blocking stdin: nothing yet, wait 1 ms
        Atomics.wait(pause, 0, 0, 1);
        continue;
      }
      if (err.code === "EOF") return;
      throw err;
    }
    if (n === 0) return; // end of input: the referee went away
    pending += decoder.write(chunk.subarray(0, n));
    let newline;
    while ((newline = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      yield line;
    }
  }
}

for (const line of stdinLines()) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    log("ignoring a line that is not JSON:", line.slice(0, 200));
    continue;
  }
  if (msg !== null && typeof msg === "object") handle(msg);
}
process.exit(0);
