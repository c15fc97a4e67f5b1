/* Report site: filter the games table (no markup is built from data; rows are only hidden). */
(function () {
  "use strict";
  var form = document.getElementById("filters");
  var table = document.getElementById("games");
  if (!form || !table) return;
  var rows = table.tBodies[0].rows;
  var shown = document.getElementById("shown");

  function matches(row, f) {
    var d = row.dataset;
    if (f.bot && d.bots.split("\n").indexOf(f.bot) < 0) return false;
    if (f.players && d.players !== f.players) return false;
    if (f.variant && d.variant !== f.variant) return false;
    if (f.end && d.end !== f.end) return false;
    var kinds = d.faults ? d.faults.split(" ") : [];
    if (f.faults === "yes" && !kinds.length) return false;
    if (f.faults === "no" && kinds.length) return false;
    if (f.faults && f.faults !== "yes" && f.faults !== "no" && kinds.indexOf(f.faults) < 0) return false;
    return true;
  }

  function apply() {
    var f = {};
    ["bot", "players", "variant", "end", "faults"].forEach(function (k) { f[k] = form.elements[k].value; });
    var n = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = matches(rows[i], f);
      rows[i].hidden = !ok;
      if (ok) n++;
    }
    shown.textContent = n + " of " + rows.length + " games";
    var query = new URLSearchParams();
    Object.keys(f).forEach(function (k) { if (f[k]) query.set(k, f[k]); });
    history.replaceState(null, "", query.toString() ? "?" + query : location.pathname);
  }

  var params = new URLSearchParams(location.search);
  params.forEach(function (value, key) {
    var select = form.elements[key];
    if (select && Array.prototype.some.call(select.options, function (o) { return o.value === value; }))
      select.value = value;
  });
  form.addEventListener("change", apply);
  apply();
})();
