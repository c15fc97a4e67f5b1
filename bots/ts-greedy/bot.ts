// ts-greedy: a starter Azul Arena bot (protocol v1) in TypeScript for Node.js.
//
// Build: tsc -p tsconfig.json      Run: node build/bot.js
//
// The referee writes one JSON message per line on stdin; the bot answers `hello`
// with `ready` and every `decide` with `move`, one JSON line each on stdout
// (fs.writeSync: one write per line, nothing to flush). Requests are read with
// blocking reads, so between them the bot sleeps in one system call with no event
// loop to wake (readline's events cost about twice the CPU time per decision). Logs go
// to stderr. JSON.parse does the parsing; the interfaces below describe the fields
// this bot reads, and every other field is ignored.
//
// The strategy is a one-ply greedy: every option is scored by its immediate effect
// on the bot's own board, and the best one is played. Change choose() to do better.
import * as fs from "node:fs";
import { StringDecoder } from "node:string_decoder";

const NAME = "ts-greedy";
const PROTOCOL = 1;
const CENTRE = -1; // option.source of the centre
const FLOOR = -1; // option.line of the floor
const FLOOR_PENALTY = [0, 1, 2, 4, 6, 8, 11, 14]; // total for n floor items

type Wall = (number | null)[][]; // wall[row][column]: a colour 0..4, or null

interface Player {
  score: number;
  lines: { colour: number | null; count: number }[];
  wall: Wall;
  floor: number[];
}

interface Observation {
  variant: "coloured" | "gray";
  factories: number[][];
  centre: number[];
  marker_in_centre: boolean;
  pending_line: number | null; // the full line to place (gray wall)
  players: Player[];
}

interface DraftOption {
  source: number;
  colour: number;
  line: number;
}

interface PlaceOption {
  column: number;
}

interface Decide {
  type: "decide";
  id: number;
  seat: number;
  decision: "draft" | "place";
  options: (DraftOption | PlaceOption)[];
  observation: Observation;
}

function floorCost(items: number): number {
  return FLOOR_PENALTY[Math.min(items, 7)];
}

/** Columns of `row` that can take `colour`. */
function legalColumns(wall: Wall, row: number, colour: number, gray: boolean): number[] {
  if (!gray) {
    const col = (row + colour) % 5; // coloured wall: cell (r, c) has colour (c - r) mod 5
    return wall[row][col] === null ? [col] : [];
  }
  if (wall[row].includes(colour)) return []; // gray wall: once per row and once per column
  return [0, 1, 2, 3, 4].filter(
    (c) => wall[row][c] === null && wall.every((cells) => cells[c] !== colour),
  );
}

/** Points for a tile put on (row, col): the horizontal and vertical runs it joins. */
function tilePoints(wall: Wall, row: number, col: number): number {
  let h = 1;
  let v = 1;
  for (let c = col - 1; c >= 0 && wall[row][c] !== null; c--) h++;
  for (let c = col + 1; c < 5 && wall[row][c] !== null; c++) h++;
  for (let r = row - 1; r >= 0 && wall[r][col] !== null; r--) v++;
  for (let r = row + 1; r < 5 && wall[r][col] !== null; r++) v++;
  if (h === 1 && v === 1) return 1;
  return (h > 1 ? h : 0) + (v > 1 ? v : 0);
}

/** What taking `opt` is worth to `me`, in points. */
function draftValue(opt: DraftOption, obs: Observation, me: Player): number {
  const gray = obs.variant === "gray";
  const n = opt.source === CENTRE ? obs.centre[opt.colour] : obs.factories[opt.source][opt.colour];
  const marker = opt.source === CENTRE && obs.marker_in_centre ? 1 : 0;
  const onFloor = me.floor.length;
  const dump = floorCost(onFloor + marker + n) - floorCost(onFloor);
  if (opt.line === FLOOR) return -dump - 0.5;
  const capacity = opt.line + 1;
  const have = me.lines[opt.line].count;
  const placed = Math.min(n, capacity - have);
  const overflow = n - placed;
  const columns = legalColumns(me.wall, opt.line, opt.colour, gray);
  if (columns.length === 0) return -dump - 1; // gray wall: no column left for this colour
  const points = Math.max(...columns.map((c) => tilePoints(me.wall, opt.line, c)));
  let value = ((points + 1) * placed) / capacity;
  if (have + placed === capacity) value += 1; // the line is tiled (and scores) this round
  else value -= 0.1 * (capacity - have - placed); // the line stays blocked
  return value - (floorCost(onFloor + marker + overflow) - floorCost(onFloor));
}

/** Index of the option to play. Put your own logic here. */
function choose(req: Decide): number {
  const obs = req.observation;
  const me = obs.players[req.seat];
  let best = 0;
  let bestValue = -Infinity;
  req.options.forEach((opt, i) => {
    const value =
      "column" in opt // gray wall: the column that scores most
        ? tilePoints(me.wall, obs.pending_line ?? 0, opt.column)
        : draftValue(opt, obs, me);
    if (value > bestValue) {
      best = i; // ties: the first option wins
      bestValue = value;
    }
  });
  return best;
}

function send(message: object): void {
  fs.writeSync(1, JSON.stringify(message) + "\n");
}

function handle(msg: { type?: unknown }): void {
  switch (msg.type) {
    case "hello":
      send({ type: "ready", protocol: PROTOCOL, name: NAME, version: "1" });
      break;
    case "decide": {
      const req = msg as Decide;
      let index = 0;
      try {
        index = choose(req);
      } catch (err) {
        console.error("choose failed:", err); // a bug must not kill the bot
      }
      send({ type: "move", id: req.id, index });
      break;
    }
    case "quit":
      process.exit(0);
    default:
      break; // game_start, game_end and unknown types need no answer
  }
}

// Lines of stdin, read with blocking reads; StringDecoder keeps a character split
// between two reads whole. The loop never returns to Node's event loop, so choose()
// must be synchronous (no timers, promises or await).
function* stdinLines(): Generator<string> {
  const chunk = Buffer.alloc(1 << 16);
  const decoder = new StringDecoder("utf8");
  const pause = new Int32Array(new SharedArrayBuffer(4));
  let pending = "";
  for (;;) {
    let n: number;
    try {
      n = fs.readSync(0, chunk, 0, chunk.length, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EAGAIN") {
        Atomics.wait(pause, 0, 0, 1); // a non-blocking stdin: nothing yet, wait 1 ms
        continue;
      }
      if (code === "EOF") return;
      throw err;
    }
    if (n === 0) return; // end of input: the referee went away
    pending += decoder.write(chunk.subarray(0, n));
    let newline: number;
    while ((newline = pending.indexOf("\n")) >= 0) {
      yield pending.slice(0, newline);
      pending = pending.slice(newline + 1);
    }
  }
}

for (const line of stdinLines()) {
  let msg: unknown;
  try {
    msg = JSON.parse(line);
  } catch {
    console.error("ignoring a line that is not JSON:", line.slice(0, 200));
    continue;
  }
  if (msg !== null && typeof msg === "object") handle(msg as { type?: unknown });
}
process.exit(0);
