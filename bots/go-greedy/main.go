// go-greedy: a starter Azul Arena bot (protocol v1) in Go.
//
// Build: go build -o bot .      Run: ./bot
//
// The referee writes one JSON message per line on stdin; the bot answers `hello`
// with `ready` and every `decide` with `move`, one JSON line each on stdout. Logs go
// to stderr. JSON is parsed with encoding/json into the structs below; fields the
// bot does not know are ignored, as protocol/SPEC.md asks.
//
// The strategy is a one-ply greedy: every option is scored by its immediate effect
// on the bot's own board, and the best one is played. Change choose() to do better.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

const (
	name     = "go-greedy"
	protocol = 1
	centre   = -1 // option.source of the centre
	floor    = -1 // option.line of the floor
)

// floorPenalty[n] is the total penalty for n floor items (7 or more cost 14).
var floorPenalty = [8]int{0, 1, 2, 4, 6, 8, 11, 14}

// ---------------------------------------------------------------- messages

// Message holds every field of every referee message we use; absent ones stay zero.
type Message struct {
	Type        string       `json:"type"`
	Protocol    int          `json:"protocol"`
	ID          int          `json:"id"`
	Seat        int          `json:"seat"`
	Decision    string       `json:"decision"` // "draft" or "place"
	Options     []Option     `json:"options"`
	Observation *Observation `json:"observation"`
}

// Option is a draft option (source, colour, line) or a place option (column).
type Option struct {
	Source int `json:"source"`
	Colour int `json:"colour"`
	Line   int `json:"line"`
	Column int `json:"column"`
}

type Observation struct {
	Variant        string   `json:"variant"` // "coloured" or "gray"
	Factories      [][5]int `json:"factories"`
	Centre         [5]int   `json:"centre"`
	MarkerInCentre bool     `json:"marker_in_centre"`
	PendingLine    *int     `json:"pending_line"` // the full line to place (gray wall)
	Players        []Player `json:"players"`
}

type Player struct {
	Score int `json:"score"`
	Lines []struct {
		Colour *int `json:"colour"` // nil when the line is empty
		Count  int  `json:"count"`
	} `json:"lines"`
	Wall  [5][5]*int `json:"wall"` // wall[row][column]: a colour, or nil when empty
	Floor []int      `json:"floor"`
}

// ---------------------------------------------------------------- the wall

func floorCost(items int) int {
	if items > 7 {
		items = 7
	}
	return floorPenalty[items]
}

// legalColumns lists the columns of `row` that can take `colour`.
func legalColumns(wall *[5][5]*int, row, colour int, gray bool) []int {
	if !gray { // coloured wall: cell (r, c) has colour (c - r) mod 5
		col := (row + colour) % 5
		if wall[row][col] == nil {
			return []int{col}
		}
		return nil
	}
	for c := 0; c < 5; c++ { // gray wall: once per row and once per column
		if wall[row][c] != nil && *wall[row][c] == colour {
			return nil
		}
	}
	var cols []int
	for c := 0; c < 5; c++ {
		ok := wall[row][c] == nil
		for r := 0; r < 5 && ok; r++ {
			ok = wall[r][c] == nil || *wall[r][c] != colour
		}
		if ok {
			cols = append(cols, c)
		}
	}
	return cols
}

// tilePoints scores a tile put on (row, col): the horizontal and vertical runs it joins.
func tilePoints(wall *[5][5]*int, row, col int) int {
	h, v := 1, 1
	for c := col - 1; c >= 0 && wall[row][c] != nil; c-- {
		h++
	}
	for c := col + 1; c < 5 && wall[row][c] != nil; c++ {
		h++
	}
	for r := row - 1; r >= 0 && wall[r][col] != nil; r-- {
		v++
	}
	for r := row + 1; r < 5 && wall[r][col] != nil; r++ {
		v++
	}
	if h == 1 && v == 1 {
		return 1
	}
	points := 0
	if h > 1 {
		points += h
	}
	if v > 1 {
		points += v
	}
	return points
}

// bestColumn returns the points and column of the best legal column, or ok=false.
func bestColumn(wall *[5][5]*int, row, colour int, gray bool) (points, col int, ok bool) {
	points = -1
	for _, c := range legalColumns(wall, row, colour, gray) {
		if p := tilePoints(wall, row, c); p > points {
			points, col, ok = p, c, true
		}
	}
	return
}

// ---------------------------------------------------------------- the strategy

// draftValue estimates what taking `opt` is worth to `me`, in points.
func draftValue(opt Option, obs *Observation, me *Player) float64 {
	gray := obs.Variant == "gray"
	n, marker := 0, 0
	if opt.Source == centre {
		n = obs.Centre[opt.Colour]
		if obs.MarkerInCentre {
			marker = 1
		}
	} else {
		n = obs.Factories[opt.Source][opt.Colour]
	}
	onFloor := len(me.Floor)
	dump := float64(floorCost(onFloor+marker+n) - floorCost(onFloor))
	if opt.Line == floor {
		return -dump - 0.5
	}
	capacity := opt.Line + 1
	have := me.Lines[opt.Line].Count
	placed := min(n, capacity-have)
	overflow := n - placed
	points, _, ok := bestColumn(&me.Wall, opt.Line, opt.Colour, gray)
	if !ok { // gray wall: this row has no column left for the colour
		return -dump - 1
	}
	value := float64(points+1) * float64(placed) / float64(capacity)
	if have+placed == capacity {
		value += 1 // the line is tiled (and scores) at the end of this round
	} else {
		value -= 0.1 * float64(capacity-have-placed) // the line stays blocked
	}
	return value - float64(floorCost(onFloor+marker+overflow)-floorCost(onFloor))
}

// choose returns the index of the option to play. Put your own logic here.
func choose(req *Message) int {
	obs := req.Observation
	me := &obs.Players[req.Seat]
	best, bestValue := 0, -1e18
	for i, opt := range req.Options {
		var value float64
		if req.Decision == "place" { // gray wall: pick the column that scores most
			value = float64(tilePoints(&me.Wall, *obs.PendingLine, opt.Column))
		} else {
			value = draftValue(opt, obs, me)
		}
		if value > bestValue { // ties: the first option wins
			best, bestValue = i, value
		}
	}
	return best
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// ---------------------------------------------------------------- the message loop

// send writes one JSON line. os.Stdout is unbuffered in Go, so each Write reaches
// the referee at once; if you wrap it in a bufio.Writer, call Flush() after each line.
func send(message any) {
	line, err := json.Marshal(message)
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(line, '\n'))
}

// safeChoose never lets a bug in choose() kill the bot: it falls back to option 0.
func safeChoose(req *Message) (index int) {
	defer func() {
		if err := recover(); err != nil {
			fmt.Fprintln(os.Stderr, "choose failed:", err)
			index = 0
		}
	}()
	return choose(req)
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<16) // ReadBytes grows as needed: lines have no fixed limit
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var msg Message
			if jerr := json.Unmarshal(line, &msg); jerr != nil {
				fmt.Fprintln(os.Stderr, "ignoring a line that is not JSON:", jerr)
			} else {
				switch msg.Type {
				case "hello":
					send(map[string]any{"type": "ready", "protocol": protocol, "name": name, "version": "1"})
				case "decide":
					send(map[string]any{"type": "move", "id": msg.ID, "index": safeChoose(&msg)})
				case "quit":
					return
				} // game_start, game_end and unknown types need no answer
			}
		}
		if err == io.EOF {
			return // the referee went away
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "reading stdin:", err)
			return
		}
	}
}
