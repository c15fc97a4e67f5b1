//! rust-greedy: a starter Azul Arena bot (protocol v1) in Rust.
//!
//! Build: `cargo build --release --offline` (see bot.toml)      Run: `./bot`
//!
//! The referee writes one JSON message per line on stdin; the bot answers `hello`
//! with `ready` and every `decide` with `move`, one JSON line each on stdout, flushed.
//! Logs go to stderr. JSON is parsed with serde_json into a `Value` (unknown fields
//! are ignored; with `serde` derive you could map it onto structs instead).
//!
//! The strategy is a one-ply greedy: every option is scored by its immediate effect
//! on the bot's own board, and the best one is played. Change `choose` to do better.

use serde_json::{json, Value};
use std::io::{self, BufRead, Write};

const NAME: &str = "rust-greedy";
const PROTOCOL: i64 = 1;
const CENTRE: i64 = -1; // option.source of the centre
const FLOOR: i64 = -1; // option.line of the floor
const FLOOR_PENALTY: [i64; 8] = [0, 1, 2, 4, 6, 8, 11, 14]; // total for n floor items

/// wall[row][column]: `Some(colour)` or `None` when empty.
type Wall = [[Option<i64>; 5]; 5];

fn floor_cost(items: usize) -> i64 {
    FLOOR_PENALTY[items.min(7)]
}

/// An integer field; a missing field reads as 0 (the SPEC says which fields exist).
fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn read_wall(cells: &Value) -> Wall {
    let mut wall = [[None; 5]; 5];
    for (r, row) in wall.iter_mut().enumerate() {
        for (c, cell) in row.iter_mut().enumerate() {
            *cell = cells[r][c].as_i64(); // null -> None
        }
    }
    wall
}

/// Columns of `row` that can take `colour`.
fn legal_columns(wall: &Wall, row: usize, colour: i64, gray: bool) -> Vec<usize> {
    if !gray {
        // coloured wall: cell (r, c) has colour (c - r) mod 5
        let col = (row + colour as usize) % 5;
        return if wall[row][col].is_none() {
            vec![col]
        } else {
            vec![]
        };
    }
    // gray wall: once per row and once per column
    if wall[row].contains(&Some(colour)) {
        return vec![];
    }
    (0..5)
        .filter(|&c| wall[row][c].is_none() && (0..5).all(|r| wall[r][c] != Some(colour)))
        .collect()
}

/// Points for a tile put on (row, col): the horizontal and vertical runs it joins.
fn tile_points(wall: &Wall, row: usize, col: usize) -> i64 {
    let run = |cells: &mut dyn Iterator<Item = Option<i64>>| {
        cells.take_while(Option::is_some).count() as i64
    };
    let h = 1
        + run(&mut (0..col).rev().map(|c| wall[row][c]))
        + run(&mut (col + 1..5).map(|c| wall[row][c]));
    let v = 1
        + run(&mut (0..row).rev().map(|r| wall[r][col]))
        + run(&mut (row + 1..5).map(|r| wall[r][col]));
    if h == 1 && v == 1 {
        return 1;
    }
    (if h > 1 { h } else { 0 }) + (if v > 1 { v } else { 0 })
}

/// What taking `opt` is worth to `me`, in points.
fn draft_value(opt: &Value, obs: &Value, me: &Value, wall: &Wall) -> f64 {
    let gray = obs["variant"] == "gray";
    let (source, colour, line) = (int(&opt["source"]), int(&opt["colour"]), int(&opt["line"]));
    let n = if source == CENTRE {
        int(&obs["centre"][colour as usize])
    } else {
        int(&obs["factories"][source as usize][colour as usize])
    };
    let marker = (source == CENTRE && obs["marker_in_centre"] == true) as i64;
    let on_floor = me["floor"].as_array().map_or(0, Vec::len);
    let dump = (floor_cost(on_floor + (marker + n) as usize) - floor_cost(on_floor)) as f64;
    if line == FLOOR {
        return -dump - 0.5;
    }
    let row = line as usize;
    let capacity = line + 1;
    let have = int(&me["lines"][row]["count"]);
    let placed = n.min(capacity - have);
    let overflow = n - placed;
    let best = legal_columns(wall, row, colour, gray)
        .into_iter()
        .map(|c| tile_points(wall, row, c))
        .max();
    let points = match best {
        Some(points) => points,
        None => return -dump - 1.0, // gray wall: no column left for this colour
    };
    let mut value = (points + 1) as f64 * placed as f64 / capacity as f64;
    if have + placed == capacity {
        value += 1.0; // the line is tiled (and scores) at the end of this round
    } else {
        value -= 0.1 * (capacity - have - placed) as f64; // the line stays blocked
    }
    value - (floor_cost(on_floor + (marker + overflow) as usize) - floor_cost(on_floor)) as f64
}

/// Index of the option to play. Put your own logic here.
fn choose(req: &Value) -> usize {
    let obs = &req["observation"];
    let me = &obs["players"][int(&req["seat"]) as usize];
    let wall = read_wall(&me["wall"]);
    let place = req["decision"] == "place";
    let options = req["options"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut best = (0, f64::NEG_INFINITY);
    for (i, opt) in options.iter().enumerate() {
        let value = if place {
            // gray wall: the column that scores most
            tile_points(
                &wall,
                int(&obs["pending_line"]) as usize,
                int(&opt["column"]) as usize,
            ) as f64
        } else {
            draft_value(opt, obs, me, &wall)
        };
        if value > best.1 {
            best = (i, value); // ties: the first option wins
        }
    }
    best.0
}

/// One JSON line on stdout, flushed: stdout is buffered, and an answer left in the
/// buffer never reaches the referee.
fn send(out: &mut impl Write, message: &Value) -> io::Result<()> {
    writeln!(out, "{message}")?;
    out.flush()
}

fn main() -> io::Result<()> {
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {
        // String grows: lines have no fixed limit
        let msg: Value = match serde_json::from_str(&line?) {
            Ok(msg) => msg,
            Err(err) => {
                eprintln!("ignoring a line that is not JSON: {err}");
                continue;
            }
        };
        match msg["type"].as_str() {
            Some("hello") => send(
                &mut out,
                &json!({"type": "ready", "protocol": PROTOCOL, "name": NAME, "version": "1"}),
            )?,
            Some("decide") => {
                // a bug in choose() must not kill the bot: fall back to option 0
                let index = std::panic::catch_unwind(|| choose(&msg)).unwrap_or(0);
                send(
                    &mut out,
                    &json!({"type": "move", "id": msg["id"], "index": index}),
                )?;
            }
            Some("quit") => break,
            _ => {} // game_start, game_end and unknown types need no answer
        }
    }
    Ok(())
}
