(function () {
  "use strict";
  // Sorting and filtering of the run summary. The page reads fine without it;
  // the Content-Security-Policy allows this script (by its hash) and nothing else.
  // Data from logs is only ever read with textContent, never parsed as HTML.
  var root = document.querySelector(".tz");
  var table = document.getElementById("tz-summary");
  if (!root || !table || !table.tBodies.length) { return; }
  root.classList.add("js");
  var tbody = table.tBodies[0];
  var rows = Array.prototype.slice.call(tbody.rows);
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);

  function cellKey(row, col) {
    var cell = row.cells[col];
    var v = cell.getAttribute("data-v");
    if (v === null) { return { num: false, text: cell.textContent.trim().toLowerCase() }; }
    if (v === "") { return { num: true, missing: true }; }
    return { num: true, value: parseFloat(v) };
  }

  function compare(col, dir) {
    return function (a, b) {
      var ka = cellKey(a, col), kb = cellKey(b, col);
      if (ka.num || kb.num) {
        if (ka.missing && kb.missing) { return 0; }
        if (ka.missing) { return 1; }
        if (kb.missing) { return -1; }
        return dir * (ka.value - kb.value);
      }
      return dir * ka.text.localeCompare(kb.text);
    };
  }

  headers.forEach(function (th, col) {
    if (th.hasAttribute("data-nosort")) { return; }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    while (th.firstChild) { button.appendChild(th.firstChild); }
    th.appendChild(button);
    button.addEventListener("click", function () {
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
      rows.slice().sort(compare(col, dir)).forEach(function (row) { tbody.appendChild(row); });
    });
  });

  var controls = document.createElement("div");
  controls.className = "controls";
  var input = document.createElement("input");
  input.type = "search";
  input.placeholder = "Filter runs by name, verdict or finding";
  input.setAttribute("aria-label", "Filter runs");
  var verdicts = document.createElement("span");
  verdicts.className = "chips";
  var count = document.createElement("span");
  count.className = "count";
  controls.appendChild(input);
  controls.appendChild(verdicts);
  controls.appendChild(count);
  table.parentNode.insertBefore(controls, table);

  var active = {};
  var labels = [];
  rows.forEach(function (row) {
    var label = row.getAttribute("data-verdict");
    if (labels.indexOf(label) < 0) { labels.push(label); }
  });
  labels.forEach(function (label) {
    var chip = document.createElement("button");
    chip.type = "button";
    chip.className = "chip v-" + label;
    chip.setAttribute("aria-pressed", "false");
    chip.textContent = label.replace("_", " ");
    chip.addEventListener("click", function () {
      active[label] = !active[label];
      chip.setAttribute("aria-pressed", active[label] ? "true" : "false");
      apply();
    });
    verdicts.appendChild(chip);
  });

  function apply() {
    var query = input.value.trim().toLowerCase();
    var anyVerdict = Object.keys(active).some(function (k) { return active[k]; });
    var shown = 0;
    rows.forEach(function (row) {
      var okVerdict = !anyVerdict || active[row.getAttribute("data-verdict")];
      var okText = !query || row.textContent.toLowerCase().indexOf(query) >= 0 ||
        (row.getAttribute("data-codes") || "").indexOf(query) >= 0;
      var show = okVerdict && okText;
      row.hidden = !show;
      var section = document.getElementById(row.getAttribute("data-run"));
      if (section) { section.hidden = !show; }
      if (show) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " runs";
  }
  input.addEventListener("input", apply);
  apply();
})();
