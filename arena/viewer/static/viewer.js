/* Azul Arena replay viewer: draws the positions the engine computed (no rules here).
 *
 * Reads every <script type="application/json" class="azul-game"> on the page (the
 * viewer data of one game: the record, one position per decision, the reproduce
 * command) and mounts a viewer in the element named by its data-mount attribute; of
 * several games for one element (data-game: a report site's block of replays), the one
 * the address names (#g=GAME_ID), else the first.
 * Every bot-controlled string is set with textContent, never parsed as HTML.
 */
(function () {
  "use strict";

  var LETTERS = "BYRKW";
  var COLOUR_NAMES = { B: "blue", Y: "yellow", R: "red", K: "black", W: "white" };
  var FLOOR_PENALTIES = [-1, -1, -2, -2, -2, -3, -3];
  var END_REASONS = {
    normal: "a horizontal row was completed",
    round_limit: "round limit reached",
    no_tiles: "no tile left to deal",
  };

  // arena/textsafe.py's rule: control, format and separator characters (Cc, Cf, Zl, Zp,
  // lone surrogates) are shown as escapes (\x1b, \u202e, \U000e0041); newline and tab
  // are kept. Bot text is never obeyed as bidi control or hidden as zero-width.
  var UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
  function hex(code, width) {
    var digits = code.toString(16);
    while (digits.length < width) digits = "0" + digits;
    return digits;
  }
  function visible(text) {
    return String(text).replace(UNSAFE, function (ch) {
      if (ch === "\n" || ch === "\t") return ch;
      var code = ch.codePointAt(0);
      if (code < 0x100) return "\\x" + hex(code, 2);
      return code < 0x10000 ? "\\u" + hex(code, 4) : "\\U" + hex(code, 8);
    });
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = visible(text);
    return node;
  }

  function tile(letter, cls) {
    var node = el("span", "az-tile az-t-" + letter + (cls ? " " + cls : ""));
    if (letter === "1") node.textContent = "1";
    node.title = letter === "1" ? "first-player marker" : COLOUR_NAMES[letter] || letter;
    return node;
  }

  /** "3:R>2" -> {source: 3, colour: "R", line: 2}; "C:K>F" -> source -1, line -1; "col4" -> column 4. */
  function parseMove(text) {
    var m = /^(C|[0-8]):([BYRKW])>([0-4]|F)$/.exec(text);
    if (m) {
      return {
        source: m[1] === "C" ? -1 : Number(m[1]),
        colour: m[2],
        line: m[3] === "F" ? -1 : Number(m[3]),
      };
    }
    var p = /^col([0-4])$/.exec(text);
    return p ? { column: Number(p[1]) } : null;
  }

  function describeMove(text) {
    var mv = parseMove(text);
    if (!mv) return text;
    if (mv.column !== undefined) return "puts the full line's tile in wall column " + mv.column;
    var from = mv.source === -1 ? "the centre" : "factory " + mv.source;
    var to = mv.line === -1 ? "the floor" : "pattern line " + mv.line;
    return "takes " + COLOUR_NAMES[mv.colour] + " from " + from + " to " + to;
  }

  function wallColour(row, col) {
    return LETTERS.charAt((((col - row) % 5) + 5) % 5);
  }

  /**
   * Draw one position into `container`.
   * opts: names, variant, move (compact notation to highlight), finalScores (list or null),
   *       pick: {seat, onSource(source, colour), onLine(line), onColumn(col), selected, legal}
   */
  function drawBoard(container, frame, opts) {
    opts = opts || {};
    var names = opts.names || [];
    var gray = opts.variant === "gray";
    var mv = opts.move ? parseMove(opts.move) : null;
    var pick = opts.pick || null;
    container.textContent = "";

    var table = el("div", "az-table");
    table.setAttribute("data-testid", "table");
    frame.f.forEach(function (tiles, i) {
      var fac = el("div", "az-factory" + (tiles ? "" : " az-empty"));
      fac.setAttribute("data-factory", String(i));
      fac.appendChild(el("span", "az-label", String(i)));
      for (var k = 0; k < tiles.length; k++) {
        var letter = tiles.charAt(k);
        var hl = mv && mv.source === i && mv.colour === letter;
        var t = tile(letter, hl ? "az-hl" : "");
        t.setAttribute("data-source", String(i));
        t.setAttribute("data-colour", letter);
        if (pick && pick.onSource) {
          t.classList.add("az-clickable");
          if (pick.selected && pick.selected.source === i && pick.selected.colour === letter)
            t.classList.add("az-hl");
          t.addEventListener("click", pick.onSource.bind(null, i, letter));
        }
        fac.appendChild(t);
      }
      table.appendChild(fac);
    });
    var centre = el("div", "az-centre");
    centre.setAttribute("data-factory", "centre");
    centre.appendChild(el("span", "az-label", "centre"));
    if (frame.m) centre.appendChild(tile("1"));
    for (var c = 0; c < frame.c.length; c++) {
      var letterC = frame.c.charAt(c);
      var hlC = mv && mv.source === -1 && mv.colour === letterC;
      var tc = tile(letterC, hlC ? "az-hl" : "");
      tc.setAttribute("data-source", "-1");
      tc.setAttribute("data-colour", letterC);
      if (pick && pick.onSource) {
        tc.classList.add("az-clickable");
        if (pick.selected && pick.selected.source === -1 && pick.selected.colour === letterC)
          tc.classList.add("az-hl");
        tc.addEventListener("click", pick.onSource.bind(null, -1, letterC));
      }
      centre.appendChild(tc);
    }
    table.appendChild(centre);
    container.appendChild(table);

    var boards = el("div", "az-boards");
    frame.p.forEach(function (player, seat) {
      var turn = frame.d !== "over" && frame.cp === seat;
      var board = el("div", "az-board" + (turn ? " az-turn" : ""));
      board.setAttribute("data-seat", String(seat));
      var head = el("div", "az-board-head");
      var name = el("span", "az-name", (names[seat] || "seat " + seat) + " · seat " + seat);
      name.title = visible(names[seat] || "");
      head.appendChild(name);
      var scoreText = "score " + player.s;
      if (opts.finalScores) scoreText = "final " + opts.finalScores[seat];
      var score = el("span", "az-score", scoreText);
      score.setAttribute("data-testid", "score-" + seat);
      head.appendChild(score);
      board.appendChild(head);

      var rows = el("div", "az-rows");
      for (var r = 0; r < 5; r++) {
        var pattern = el("div", "az-pattern");
        pattern.setAttribute("data-line", String(r));
        var line = player.l[r];
        for (var s = r; s >= 0; s--) {
          // right-aligned: slot s is filled when s < count (filled from the right)
          pattern.appendChild(s < line.length ? tile(line.charAt(0)) : el("span", "az-slot"));
        }
        if (turn && mv && mv.line === r) pattern.classList.add("az-target");
        if (turn && frame.d === "place" && frame.pl === r) pattern.classList.add("az-target");
        if (pick && pick.onLine && turn && pick.seat === seat) {
          pattern.classList.add("az-clickable");
          if (pick.legalLines && pick.legalLines.indexOf(r) >= 0) pattern.classList.add("az-legal");
          pattern.addEventListener("click", pick.onLine.bind(null, r));
        }
        rows.appendChild(pattern);
        var wallRow = el("div", "az-wallrow");
        for (var col = 0; col < 5; col++) {
          var placed = player.w.charAt(r * 5 + col);
          var cell;
          if (placed !== ".") {
            cell = tile(placed);
          } else {
            cell = el("span", "az-cell" + (gray ? "" : " az-ghost-" + wallColour(r, col)));
          }
          cell.setAttribute("data-cell", r + "," + col);
          if (turn && mv && mv.column === col && frame.pl === r) cell.classList.add("az-hl");
          if (pick && pick.onColumn && turn && pick.seat === seat && frame.pl === r) {
            if (pick.legalColumns && pick.legalColumns.indexOf(col) >= 0) {
              cell.classList.add("az-clickable", "az-legal");
              cell.addEventListener("click", pick.onColumn.bind(null, col));
            }
          }
          wallRow.appendChild(cell);
        }
        rows.appendChild(wallRow);
      }
      board.appendChild(rows);

      var floor = el("div", "az-floor" + (turn && mv && mv.line === -1 ? " az-target" : ""));
      floor.setAttribute("data-line", "-1");
      for (var f = 0; f < 7; f++) {
        var slot = el("span", "az-floor-slot");
        var item = player.f.charAt(f);
        slot.appendChild(item ? tile(item) : el("span", "az-slot"));
        slot.appendChild(el("span", "", String(FLOOR_PENALTIES[f])));
        floor.appendChild(slot);
      }
      if (pick && pick.onLine && turn && pick.seat === seat) {
        floor.classList.add("az-clickable");
        if (pick.legalLines && pick.legalLines.indexOf(-1) >= 0) floor.classList.add("az-legal");
        floor.addEventListener("click", pick.onLine.bind(null, -1));
      }
      board.appendChild(floor);
      boards.appendChild(board);
    });
    container.appendChild(boards);
  }

  /** Full positions from the first position and per-step deltas (see frames.py: delta). */
  function expandFrames(data) {
    if (data.frames_encoding !== "delta") return data.frames;
    var out = [data.frames[0]];
    for (var i = 1; i < data.frames.length; i++) {
      var prev = out[i - 1], d = data.frames[i];
      var next = JSON.parse(JSON.stringify(prev));
      Object.keys(d).forEach(function (key) {
        if (key === "f") {
          Object.keys(d.f).forEach(function (k) { next.f[Number(k)] = d.f[k]; });
        } else if (key === "p") {
          Object.keys(d.p).forEach(function (seat) {
            Object.keys(d.p[seat]).forEach(function (k) { next.p[Number(seat)][k] = d.p[seat][k]; });
          });
        } else {
          next[key] = d[key];
        }
      });
      out.push(next);
    }
    return out;
  }

  function flatDecisions(record) {
    var out = [];
    record.rounds.forEach(function (rnd) {
      rnd.decisions.forEach(function (d) {
        out.push({ round: rnd.number, seat: d.seat, move: d.move, think: d.think_ms, auto: d.auto, stderr: d.stderr || null });
      });
    });
    return out;
  }

  function button(label, title, onClick) {
    var b = el("button", "", label);
    b.type = "button";
    b.title = title;
    b.setAttribute("aria-label", title);
    b.addEventListener("click", onClick);
    return b;
  }

  function mount(root, data) {
    var record = data.record;
    var frames = expandFrames(data);
    var names = record.players;
    var decisions = flatDecisions(record);
    var total = decisions.length;
    var roundStarts = [];
    decisions.forEach(function (d, i) {
      if (i === 0 || decisions[i - 1].round !== d.round) roundStarts.push(i);
    });
    var faultsAt = {};
    (data.fault_steps || []).forEach(function (step, i) {
      if (step !== null && step !== undefined) (faultsAt[step] = faultsAt[step] || []).push(record.faults[i]);
    });
    var step = 0;
    var timer = null;
    var SPEEDS = [["0.5×", 1000], ["1×", 500], ["2×", 250], ["4×", 125], ["8×", 60]];
    var firstFault = null;
    (data.fault_steps || []).forEach(function (s) {
      if (s !== null && s !== undefined && (firstFault === null || s < firstFault)) firstFault = s;
    });
    var resultShown = false;  // no spoiler: the result shows on the final position or on request

    root.textContent = "";
    root.classList.add("az-viewer");
    var title = el("h1", "", names.join(" vs "));
    root.appendChild(title);
    var seed = data.seed !== undefined ? data.seed : record.seed;  // text: 64-bit seeds
    var sub = [record.n_players + " players", record.variant + " wall", "seed " + seed,
      record.rounds.length + " rounds", total + " decisions", "end: " + record.end_reason];
    if (data.game_id) sub.unshift("game " + data.game_id);
    root.appendChild(el("div", "az-sub", sub.join(" · ")));

    var controls = el("div", "az-controls");
    var bFirst = button("|<", "first position (Home)", function () { go(0); });
    var bPrevRound = button("<<", "previous round (↑ / PageUp)", function () { go(prevRoundStart()); });
    var bPrev = button("<", "previous decision (←)", function () { go(step - 1); });
    var bPlay = button("▶", "play / pause (space)", togglePlay);
    var bNext = button(">", "next decision (→)", function () { go(step + 1); });
    var bNextRound = button(">>", "next round (↓ / PageDown)", function () { go(nextRoundStart()); });
    var bLast = button(">|", "final position (End)", function () { go(total); });
    bPrev.setAttribute("data-testid", "prev");
    bNext.setAttribute("data-testid", "next");
    bLast.setAttribute("data-testid", "last");
    bNextRound.setAttribute("data-testid", "next-round");
    [bFirst, bPrevRound, bPrev, bPlay, bNext, bNextRound, bLast].forEach(function (b) { controls.appendChild(b); });
    var speed = el("select", "az-speed");
    speed.title = "playback speed";
    speed.setAttribute("aria-label", "playback speed");
    speed.setAttribute("data-testid", "speed");
    SPEEDS.forEach(function (sp, i) {
      var opt = el("option", "", sp[0]);
      opt.value = String(sp[1]);
      if (i === 1) opt.selected = true;
      speed.appendChild(opt);
    });
    speed.addEventListener("change", function () { if (timer !== null) { stop(); togglePlay(); } });
    controls.appendChild(speed);
    var bFault = button("first fault", "jump to the first decision a fault cost (F)", function () {
      if (firstFault !== null) go(firstFault);
    });
    bFault.setAttribute("data-testid", "first-fault");
    bFault.hidden = firstFault === null;
    controls.appendChild(bFault);
    var bResult = button("show result", "show the result now (spoiler)", function () {
      resultShown = !resultShown;
      render();
    });
    bResult.setAttribute("data-testid", "show-result");
    controls.appendChild(bResult);
    var stepLabel = el("span", "az-step");
    stepLabel.setAttribute("data-testid", "step");
    controls.appendChild(stepLabel);
    var timeline = el("input", "az-timeline");
    timeline.type = "range";
    timeline.min = "0";
    timeline.max = String(total);
    timeline.step = "1";
    timeline.title = "timeline: drag to any decision";
    timeline.setAttribute("aria-label", "timeline");
    timeline.setAttribute("data-testid", "timeline");
    timeline.addEventListener("input", function () { go(Number(timeline.value)); });
    controls.appendChild(timeline);
    controls.appendChild(el("span", "az-keys", "keys: ← → move · ↑ ↓ round · Home End · space play · F fault"));
    root.appendChild(controls);

    var main = el("div", "az-main");
    var boardBox = el("div", "az-boardbox");
    var side = el("div", "az-side");
    main.appendChild(boardBox);
    main.appendChild(side);
    root.appendChild(main);

    var nowCard = el("div", "az-card");
    nowCard.setAttribute("data-testid", "now");
    side.appendChild(nowCard);

    var movesCard = el("div", "az-card");
    movesCard.appendChild(el("h2", "", "Moves"));
    var movesBox = el("div", "az-moves");
    var movesTable = el("table");
    var rowOf = [];
    var lastRound = 0;
    decisions.forEach(function (d, i) {
      if (d.round !== lastRound) {
        lastRound = d.round;
        var rr = el("tr", "az-round");
        var td = el("td", "", "Round " + d.round);
        td.colSpan = 5;
        rr.appendChild(td);
        movesTable.appendChild(rr);
      }
      var tr = el("tr");
      tr.appendChild(el("td", "az-num", String(i + 1)));
      tr.appendChild(el("td", "az-who", names[d.seat]));
      tr.appendChild(el("td", "", d.move));
      tr.appendChild(el("td", "az-num", d.think === null || d.think === undefined ? "" : d.think.toFixed(1) + " ms"));
      var flags = el("td");
      if (d.auto) flags.appendChild(el("span", "az-flag az-bad", "auto"));
      if (d.stderr) {
        var sf = el("span", "az-flag", "stderr");
        sf.title = "the bot wrote to stderr while deciding";
        flags.appendChild(sf);
      }
      tr.appendChild(flags);
      tr.addEventListener("click", function () { go(i); });
      movesTable.appendChild(tr);
      rowOf.push(tr);
    });
    movesBox.appendChild(movesTable);
    movesCard.appendChild(movesBox);
    side.appendChild(movesCard);

    if (record.faults.length) {
      var faultsCard = el("div", "az-card az-faults");
      faultsCard.setAttribute("data-testid", "faults");
      faultsCard.appendChild(el("h2", "", "Faults (" + record.faults.length + ")"));
      record.faults.forEach(function (f, i) {
        faultsCard.appendChild(faultBox(f, (data.fault_steps || [])[i]));
      });
      side.appendChild(faultsCard);
    }

    var timeWarnings = record.warnings || [];
    if (timeWarnings.length) {
      var warnCard = el("div", "az-card az-faults");
      warnCard.setAttribute("data-testid", "time-warnings");
      warnCard.appendChild(el("h2", "", "Time warnings (" + timeWarnings.length + ")"));
      timeWarnings.forEach(function (w) {
        var box = el("div", "az-fault az-time-warning");
        box.appendChild(el("div", "", names[w.seat] + " (seat " + w.seat + "): over the soft limit in round " + w.round));
        box.appendChild(el("div", "az-muted", w.message));
        warnCard.appendChild(box);
      });
      side.appendChild(warnCard);
    }

    var finalCard = el("div", "az-card az-final");
    finalCard.setAttribute("data-testid", "final");
    finalCard.appendChild(el("h2", "", "Result — " + record.end_reason + " (" + (END_REASONS[record.end_reason] || "") + ")"));
    var ft = el("table");
    var hr = el("tr");
    ["rank", "player", "rounds", "+rows", "+columns", "+colours", "total"].forEach(function (h) { hr.appendChild(el("th", "", h)); });
    ft.appendChild(hr);
    record.final.slice().sort(function (a, b) { return a.rank - b.rank || a.seat - b.seat; }).forEach(function (f) {
      var tr = el("tr");
      tr.appendChild(el("td", "", f.rank));
      tr.appendChild(el("td", "", f.player + " (seat " + f.seat + ")"));
      tr.appendChild(el("td", "", f.rounds));
      tr.appendChild(el("td", "", f.rows));
      tr.appendChild(el("td", "", f.columns));
      tr.appendChild(el("td", "", f.colours));
      var tot = el("td", "", f.total);
      tot.setAttribute("data-testid", "final-total-" + f.seat);
      tr.appendChild(tot);
      ft.appendChild(tr);
    });
    finalCard.appendChild(ft);
    root.appendChild(finalCard);
    var reproCard = el("div", "az-card az-final");
    reproCard.appendChild(el("h2", "", "Reproduce"));
    var repro = el("div", "az-repro", data.reproduce);
    repro.setAttribute("data-testid", "reproduce");
    reproCard.appendChild(repro);
    reproCard.appendChild(el("div", "az-muted", "Bot folders replace the names; the seed fixes the deals."));
    root.appendChild(reproCard);

    function faultBox(f, at) {
      var box = el("div", "az-fault");
      box.appendChild(el("div", "", names[f.seat] + " (seat " + f.seat + "): " + f.kind + " in round " + f.round +
        (f.forfeit ? " — forfeit" : " — strike")));
      box.appendChild(el("div", "az-muted", f.message));
      if (f.last_message) {
        box.appendChild(el("div", "az-muted", "last line:"));
        box.appendChild(el("pre", "az-pre", f.last_message));
      }
      if (f.stderr_tail) {
        box.appendChild(el("div", "az-muted", "stderr tail:"));
        box.appendChild(el("pre", "az-pre", f.stderr_tail));
      }
      if (at !== null && at !== undefined) {
        var link = el("a", "az-link", "go to move " + (at + 1));
        link.addEventListener("click", function () { go(at); });
        box.appendChild(link);
      }
      return box;
    }

    function prevRoundStart() {
      for (var i = roundStarts.length - 1; i >= 0; i--) if (roundStarts[i] < step) return roundStarts[i];
      return 0;
    }
    function nextRoundStart() {
      for (var i = 0; i < roundStarts.length; i++) if (roundStarts[i] > step) return roundStarts[i];
      return total;
    }

    function render() {
      var frame = frames[step];
      var d = decisions[step];
      var over = step >= total;
      drawBoard(boardBox, frame, {
        names: names,
        variant: record.variant,
        move: over ? null : d.move,
        finalScores: over ? record.final.map(function (f) { return f.total; }) : null,
      });
      stepLabel.textContent = over
        ? "final position · " + total + " decisions"
        : "round " + d.round + " · decision " + (step + 1) + " of " + total;
      nowCard.textContent = "";
      if (over) {
        nowCard.appendChild(el("h2", "", "Game over"));
        nowCard.appendChild(el("div", "az-move-now", "End: " + record.end_reason + " — " + (END_REASONS[record.end_reason] || "")));
      } else {
        nowCard.appendChild(el("h2", "", "Move " + (step + 1) + " · round " + d.round));
        var who = el("div", "az-move-now");
        who.appendChild(el("strong", "", names[d.seat]));
        who.appendChild(document.createTextNode(" (seat " + d.seat + ") " + describeMove(d.move) + "  "));
        var code = el("code", "", d.move);
        code.setAttribute("data-testid", "move-now");
        who.appendChild(code);
        nowCard.appendChild(who);
        var meta = [];
        if (d.think !== null && d.think !== undefined) meta.push("thought " + d.think.toFixed(1) + " ms");
        if (d.auto) meta.push("played by the referee (the bot faulted)");
        if (meta.length) nowCard.appendChild(el("div", "az-muted", meta.join(" · ")));
        if (d.stderr) {
          nowCard.appendChild(el("div", "az-muted", "stderr while deciding:"));
          var pre = el("pre", "az-pre", d.stderr);
          pre.setAttribute("data-testid", "stderr-now");
          nowCard.appendChild(pre);
        }
        (faultsAt[step] || []).forEach(function (f) { nowCard.appendChild(faultBox(f, null)); });
      }
      rowOf.forEach(function (tr, i) { tr.classList.toggle("az-cur", i === step); });
      if (!over && rowOf[step] && rowOf[step].scrollIntoView) {
        var box = movesBox.getBoundingClientRect(), r = rowOf[step].getBoundingClientRect();
        if (r.top < box.top || r.bottom > box.bottom) movesBox.scrollTop += r.top - box.top - box.height / 2;
      }
      bFirst.disabled = bPrev.disabled = bPrevRound.disabled = step === 0;
      bLast.disabled = bNext.disabled = bNextRound.disabled = over;
      timeline.value = String(step);
      finalCard.hidden = !(over || resultShown);
      bResult.hidden = over;
      bResult.textContent = resultShown ? "hide result" : "show result";
      root.setAttribute("data-step", String(step));
    }

    function go(target) {
      step = Math.max(0, Math.min(total, target));
      if (step >= total) stop();
      render();
    }
    function stop() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      bPlay.textContent = "▶";
    }
    function togglePlay() {
      if (timer !== null) return stop();
      if (step >= total) step = 0;
      bPlay.textContent = "||";
      timer = setInterval(function () { go(step + 1); }, Number(speed.value) || 500);
    }

    document.addEventListener("keydown", function (ev) {
      if (ev.target && /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName)) return;
      var keys = {
        ArrowRight: function () { go(step + 1); }, ArrowLeft: function () { go(step - 1); },
        ArrowDown: function () { go(nextRoundStart()); }, PageDown: function () { go(nextRoundStart()); },
        ArrowUp: function () { go(prevRoundStart()); }, PageUp: function () { go(prevRoundStart()); },
        Home: function () { go(0); }, End: function () { go(total); }, " ": togglePlay,
        f: function () { if (firstFault !== null) go(firstFault); },
      };
      if (keys[ev.key]) { ev.preventDefault(); keys[ev.key](); }
    });
    var hash = /^#move-(\d+)$/.exec(location.hash || "");
    go(hash ? Number(hash[1]) - 1 : 0);
    return { go: go };
  }

  function mountAll() {
    var nodes = document.querySelectorAll('script[type="application/json"].azul-game');
    // A page of several games for one viewer (data-game): the one named by #g=GAME_ID.
    var named = /^#g=([^&]*)/.exec(location.hash || "");
    var wanted = named ? decodeURIComponent(named[1]) : null;
    var mounted = {};
    for (var i = 0; i < nodes.length; i++) {
      var node = nodes[i];
      var mountId = node.getAttribute("data-mount") || "azul-viewer";
      var game = node.getAttribute("data-game");
      if (game !== null && (mounted[mountId] || (wanted !== null && game !== wanted))) continue;
      var target = document.getElementById(mountId);
      if (!target) continue;
      mounted[mountId] = true;
      try {
        var data = JSON.parse(node.textContent);
        mount(target, data);
        if (game !== null) document.title = visible(data.record.players.join(" vs ")) + " \u2014 Azul Arena replay";
      } catch (err) {
        target.textContent = "This replay could not be shown: " + err;
      }
    }
    if (wanted !== null && !mounted["azul-viewer"]) {
      var main = document.getElementById("azul-viewer");
      if (main) main.textContent = "No game " + wanted + " on this page.";
    }
  }
  // Another game of the same page (a link within it): mount afresh.
  window.addEventListener("hashchange", function () {
    if (/^#g=/.test(location.hash || "")) location.reload();
  });

  window.AzulViewer = { visible: visible, expandFrames: expandFrames, drawBoard: drawBoard, mount: mount, parseMove: parseMove, describeMove: describeMove };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
