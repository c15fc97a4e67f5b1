/* Azul Arena: the browser seat. Polls /state, draws the board with AzulViewer.drawBoard,
 * and posts the clicked move to /move. Text from the server is only ever set as text. */
(function () {
  "use strict";
  var boot = JSON.parse(document.getElementById("play-boot").textContent);
  var statusBox = document.getElementById("play-status");
  var boardBox = document.getElementById("play-board");
  var optionsBox = document.getElementById("play-options");
  var recentBox = document.getElementById("play-recent");
  var resultBox = document.getElementById("play-result");
  var state = null;
  var version = -1;
  var selected = null;
  var sending = false;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = AzulViewer.visible(String(text));
    return node;
  }

  function send(move) {
    if (sending || !state || state.status !== "your_turn") return;
    sending = true;
    statusBox.textContent = "Sending " + move + "…";
    fetch("/move", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Arena-Token": boot.token },
      body: JSON.stringify({ req: state.req, move: move }),
    }).then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (res) {
        sending = false;
        if (!res.ok) statusBox.textContent = "Refused: " + res.body.error;
        selected = null;
      }, function () { sending = false; statusBox.textContent = "The game server is gone."; });
  }

  function draftOptions(source, colour) {
    return state.options.filter(function (text) {
      var mv = AzulViewer.parseMove(text);
      return mv && mv.source === source && mv.colour === colour;
    });
  }

  function render() {
    var s = state;
    statusBox.textContent = s.message || s.status;
    var names = s.names || [];
    if (s.frame) {
      var mine = s.status === "your_turn";
      var pick = null;
      if (mine) {
        var lines = selected ? draftOptions(selected.source, selected.colour).map(function (t) { return AzulViewer.parseMove(t).line; }) : [];
        var columns = s.options.filter(function (t) { return /^col/.test(t); }).map(function (t) { return AzulViewer.parseMove(t).column; });
        pick = {
          seat: s.seat,
          selected: selected,
          legalLines: lines,
          legalColumns: columns,
          onSource: function (source, colour) {
            selected = draftOptions(source, colour).length ? { source: source, colour: colour } : null;
            render();
          },
          onLine: function (line) {
            if (!selected) return;
            var src = selected.source === -1 ? "C" : String(selected.source);
            var text = src + ":" + selected.colour + ">" + (line === -1 ? "F" : String(line));
            if (s.options.indexOf(text) >= 0) send(text);
          },
          onColumn: function (col) { send("col" + col); },
        };
      }
      AzulViewer.drawBoard(boardBox, s.frame, {
        names: names, variant: s.variant, move: s.status === "waiting" ? s.chosen : null, pick: pick,
        finalScores: s.status === "over" ? s.results.map(function (r) { return r.score; }) : null,
      });
    }
    optionsBox.textContent = "";
    if (s.status === "your_turn") {
      s.options.forEach(function (text) {
        var b = el("button", "az-option", text);
        b.type = "button";
        b.title = AzulViewer.describeMove(text);
        b.setAttribute("data-move", text);
        b.addEventListener("click", function () { send(text); });
        optionsBox.appendChild(b);
      });
    } else {
      optionsBox.appendChild(el("div", "az-muted", s.status === "over" ? "The game is over." : "Waiting for the other seats…"));
    }
    recentBox.textContent = "";
    (s.recent || []).forEach(function (m) {
      var line = el("div", "", (m.text || (names[m.seat] || "seat " + m.seat) + " " + AzulViewer.describeMove(m.move)) + "  ");
      line.appendChild(el("code", "", m.move));
      recentBox.appendChild(line);
    });
    resultBox.hidden = s.status !== "over";
    if (s.status === "over") {
      resultBox.textContent = "";
      resultBox.appendChild(el("h2", "", "Result (" + s.end_reason + ")"));
      s.results.slice().sort(function (a, b) { return a.rank - b.rank; }).forEach(function (r) {
        var row = el("div", "", "#" + r.rank + " " + r.player + " (seat " + r.seat + "): " + r.score + (r.fault ? " — " + r.fault : ""));
        row.setAttribute("data-testid", "result-" + r.seat);
        resultBox.appendChild(row);
      });
      (s.faults || []).forEach(function (text, i) {
        var fault = el("div", "az-fault", text);
        fault.setAttribute("data-testid", "fault-" + i);
        resultBox.appendChild(fault);
      });
      resultBox.appendChild(el("div", "az-muted", "The record is saved; the terminal shows where."));
    }
    document.body.setAttribute("data-status", s.status);
    document.body.setAttribute("data-version", String(s.version));
  }

  function poll() {
    fetch("/state", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (s) {
      if (s.version !== version) {
        version = s.version;
        state = s;
        selected = null;
        render();
      }
      if (s.status !== "over") setTimeout(poll, 200);
    }, function () {
      statusBox.textContent = "The game server has stopped.";
    });
  }
  poll();
})();
