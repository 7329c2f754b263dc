(function () {
  "use strict";
  // Interactive charts, drawn with the vendored uPlot from each run's JSON data element (never markup) when
  // its section comes into view. The static figures stay in the page for readers without scripts and are
  // hidden here. Text from logs (run names, tags) is only ever set with textContent.
  var root = document.querySelector(".tz");
  if (!root || typeof uPlot === "undefined") { return; }
  var COLORS = { train: "#2563eb", val: "#ea580c" };
  var MARKS = {
    diverged: ["#991b1b", []], blowup: ["#991b1b", [2, 3]], onset: ["#b45309", [6, 4]], early: ["#7c3aed", [2, 3]],
    resume: ["#15803d", [2, 3]], drop: ["rgba(220,38,38,0.5)", []]
  };
  var SPIKE = "#dc2626", BEST = "#15803d", GREY = "#1f2937";
  var dataNode = document.getElementById("tz-charts");
  if (!dataNode) { return; }
  var all = null;  // every run's chart data, parsed on the first draw
  function chartData() {
    if (all === null) { all = JSON.parse(dataNode.textContent); }
    return all;
  }
  var settings = chartData().settings || {};
  var state = { smoothing: typeof settings.smoothing === "number" ? settings.smoothing : 0.6 };
  var charts = [];  // every drawn chart: {u, build} so that smoothing changes redraw all of them
  var sliders = [];

  function ema(y, w) {
    // TensorBoard's debiased EMA, as tanalyze.curves.debiased_ema: missing points pass through.
    var out = new Array(y.length), last = 0, n = 0;
    for (var i = 0; i < y.length; i++) {
      var v = y[i];
      if (v === null || v === undefined || !isFinite(v)) { out[i] = v; continue; }
      n += 1;
      last = last * w + (1 - w) * v;
      out[i] = last / (1 - Math.pow(w, n));
    }
    return out;
  }

  function fmt(v) {
    if (v === null || v === undefined) { return "\u2014"; }
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) { return v.toExponential(3); }
    return String(+v.toPrecision(5));
  }

  function fmtStep(v) {
    return v === null || v === undefined ? "\u2014" : Math.round(v).toLocaleString("en-US");
  }

  function fmtTick(v) {
    if (v === null || v === undefined) { return ""; }
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) { return v.toExponential(1).replace("e+", "e"); }
    return String(+v.toPrecision(4));
  }

  function ticks(format) {
    return function (u, splits) { return splits.map(format); };
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function steps(dx) {
    // a line's steps: the first, then differences (see chartdata.py)
    var out = new Array(dx.length), at = 0;
    for (var i = 0; i < dx.length; i++) { at += dx[i]; out[i] = at; }
    return out;
  }

  function positive(lines) {
    return lines.every(function (l) { return l.y.every(function (v) { return v > 0; }); });
  }

  // One chart: lines (raw faint + smoothed bold when smoothable), markers, a toolbar, a read-out.
  function chart(box, spec) {
    var toolbar = el("div", "tz-tools");
    var readout = el("div", "tz-readout", spec.legend === false ? "" : "Hover to read step and values; drag to zoom.");
    var host = el("div", "tz-plot");
    if (spec.title) { box.appendChild(el("div", "tz-title", spec.title)); }
    box.appendChild(toolbar);
    box.appendChild(host);
    box.appendChild(readout);
    var log = !!spec.log;
    var canLog = positive(spec.lines);
    // x is the step, or minutes since the run started (system metrics), shown to a tenth
    var fmtX = spec.xname === "minutes" ? function (v) {
      return v === null || v === undefined ? "\u2014" : (Math.round(v * 10) / 10).toLocaleString("en-US");
    } : fmtStep;
    var joined = uPlot.join(spec.lines.map(function (l) { return [l.x, l.y]; }));

    function data() {
      var out = [joined[0]];
      spec.lines.forEach(function (l, k) {
        var raw = joined[k + 1];
        if (l.smooth && state.smoothing > 0) { out.push(raw); out.push(ema(raw, state.smoothing)); }
        else { out.push(raw); }
      });
      return out;
    }

    function series() {
      var s = [{ label: spec.xname || "step", value: function (u, v) { return fmtX(v); } }];
      spec.lines.forEach(function (l) {
        var smoothed = l.smooth && state.smoothing > 0;
        s.push({ label: l.label + (smoothed ? " (raw)" : ""), stroke: l.color, width: smoothed ? 0.8 : 1.5,
                 alpha: smoothed ? 0.3 : 1, spanGaps: true, points: { show: l.x.length < 60 },
                 value: function (u, v) { return fmt(v); } });
        if (smoothed) {
          s.push({ label: l.label, stroke: l.color, width: 1.8, spanGaps: true, points: { show: false },
                   value: function (u, v) { return fmt(v); } });
        }
      });
      return s;
    }

    function drawMarks(u) {
      var ctx = u.ctx, b = u.bbox, dpr = devicePixelRatio || 1;
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();
      (spec.marks || []).forEach(function (m) {
        var style = MARKS[m.kind] || ["#374151", []];
        var x = u.valToPos(m.step, "x", true);
        if (m.kind === "diverged") {
          ctx.fillStyle = "rgba(153,27,27,0.06)";
          ctx.fillRect(x, b.top, b.left + b.width - x, b.height);
        }
        ctx.strokeStyle = style[0];
        ctx.lineWidth = 1.3 * dpr;
        ctx.setLineDash(style[1].map(function (d) { return d * dpr; }));
        ctx.beginPath();
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + b.height);
        ctx.stroke();
      });
      ctx.setLineDash([]);
      function glyph(px, py, color, kind) {
        var r = (kind === "best" ? 5 : 4) * dpr;
        ctx.fillStyle = color;
        ctx.beginPath();
        if (kind === "best") { ctx.arc(px, py, r, 0, 2 * Math.PI); }
        else { ctx.moveTo(px - r, py - r); ctx.lineTo(px + r, py - r); ctx.lineTo(px, py + r); ctx.closePath(); }
        ctx.fill();
      }
      ctx.strokeStyle = MARKS.diverged[0];
      ctx.lineWidth = 1.2 * dpr;
      (spec.nonfinite || []).forEach(function (step) {
        var px = u.valToPos(step, "x", true), py = b.top + 5 * dpr, r = 3 * dpr;
        ctx.beginPath();
        ctx.moveTo(px - r, py - r); ctx.lineTo(px + r, py + r);
        ctx.moveTo(px + r, py - r); ctx.lineTo(px - r, py + r);
        ctx.stroke();
      });
      var sp = spec.spikes;
      if (sp) {
        for (var i = 0; i < sp.x.length; i++) {
          if (log && !(sp.y[i] > 0)) { continue; }
          glyph(u.valToPos(sp.x[i], "x", true), u.valToPos(sp.y[i], "y", true), SPIKE, "spike");
        }
      }
      if (spec.best && (!log || spec.best[1] > 0)) {
        glyph(u.valToPos(spec.best[0], "x", true), u.valToPos(spec.best[1], "y", true), BEST, "best");
      }
      ctx.restore();
    }

    function showReadout(u) {
      var idx = u.cursor.idx;
      if (idx === null || idx === undefined) { return; }
      var parts = [spec.run, (spec.xname || "step") + " " + fmtX(u.data[0][idx])];
      for (var k = 1; k < u.series.length; k++) {
        var s = u.series[k];
        if (!s.show || / \(raw\)$/.test(s.label)) { continue; }
        var v = u.data[k][idx];
        if (v === null || v === undefined) { continue; }
        parts.push(s.label + " = " + fmt(v));
      }
      if (spec.stepAt && spec.stepAt.length > 1) {  // [seconds, step] pairs: where this minute is in steps
        var sec = u.data[0][idx] * 60, pairs = spec.stepAt, j = 1;
        while (j < pairs.length - 1 && pairs[j][0] < sec) { j++; }
        var a = pairs[j - 1], b = pairs[j];
        if (sec >= pairs[0][0] && sec <= pairs[pairs.length - 1][0] && b[0] > a[0]) {
          parts.splice(2, 0, "\u2248 step " + fmtStep(a[1] + (b[1] - a[1]) * (sec - a[0]) / (b[0] - a[0])));
        }
      }
      readout.textContent = parts.join(" \u00b7 ");
      box.setAttribute("data-readout-step", String(u.data[0][idx]));
    }

    function capOf() { return spec.cap ? spec.cap[log ? "log" : "linear"] : undefined; }

    function yScale() {
      // a blow-up far beyond the rest of the run is cut at the cap (as the static figure does), and said so
      var cap = capOf(), scale = log ? { distr: 3 } : {};
      if (cap !== undefined) {
        scale.range = function (u, min, max) {
          var r = log ? uPlot.rangeLog(min, Math.min(max, cap), 10, true) : uPlot.rangeNum(min, Math.min(max, cap), 0.1, true);
          return r;
        };
      }
      capNote.textContent = cap !== undefined ? "\u2191 off the scale above: up to " + fmt(spec.cap.top) : "";
      return scale;
    }

    var capNote = el("span", "tz-cap");
    toolbar.appendChild(capNote);
    var u = null;
    function build() {
      var width = Math.max(200, spec.width ? spec.width() : (host.clientWidth || box.clientWidth || 600));
      var opts = {
        width: width, height: spec.height, series: series(),
        scales: { x: { time: false }, y: yScale() },
        axes: [{ stroke: "#6b7280", grid: { stroke: "#eef0f3" }, size: 34, values: ticks(fmtX) },
               { stroke: "#6b7280", grid: { stroke: "#eef0f3" }, size: 58, values: ticks(fmtTick) }],
        legend: { show: spec.legend !== false, live: true },
        cursor: { sync: spec.sync ? { key: spec.sync } : undefined, drag: { x: true, y: false } },
        hooks: { draw: [drawMarks], setCursor: [showReadout] }
      };
      if (u) { u.destroy(); }
      u = new uPlot(opts, data(), host);
      box.tzChart = u;
      return u;
    }

    function button(text, title, onClick) {
      var b = el("button", "tz-btn", text);
      b.type = "button";
      b.title = title;
      b.addEventListener("click", onClick);
      toolbar.appendChild(b);
      return b;
    }
    button("Reset zoom", "Show every step again (or double-click the chart)", function () {
      u.setScale("x", { min: joined[0][0], max: joined[0][joined[0].length - 1] });
    }).className += " tz-reset";
    var logLabel = el("label", "tz-log");
    var logBox = el("input");
    logBox.type = "checkbox";
    logBox.checked = log;
    logBox.disabled = !canLog;
    logLabel.title = canLog ? "Logarithmic y axis" : "Log scale needs positive values only";
    logLabel.appendChild(logBox);
    logLabel.appendChild(document.createTextNode(" log scale"));
    logBox.addEventListener("change", function () { log = logBox.checked; build(); });
    toolbar.appendChild(logLabel);
    if (spec.lines.some(function (l) { return l.smooth; })) {
      var sLabel = el("label", "tz-smooth", "smoothing ");
      var slider = el("input");
      slider.type = "range";
      slider.min = "0";
      slider.max = "0.99";
      slider.step = "0.01";
      slider.value = String(state.smoothing);
      var shown = el("output", "", state.smoothing.toFixed(2));
      sLabel.appendChild(slider);
      sLabel.appendChild(shown);
      slider.addEventListener("input", function () { setSmoothing(parseFloat(slider.value)); });
      toolbar.appendChild(sLabel);
      sliders.push([slider, shown]);
    }
    build();
    charts.push({ rebuild: build, smooth: spec.lines.some(function (l) { return l.smooth; }) });
    return u;
  }

  function setSmoothing(w) {
    if (!(w >= 0 && w < 1)) { return; }
    state.smoothing = w;
    sliders.forEach(function (p) { p[0].value = String(w); p[1].textContent = w.toFixed(2); });
    charts.forEach(function (c) { if (c.smooth) { c.rebuild(); } });
  }

  function lossSpec(d, sync) {
    var lines = d.loss.series.map(function (s) {
      return { label: s.key + " \u00b7 " + s.tag, color: COLORS[s.key] || GREY, x: steps(s.dx), y: s.y,
               smooth: s.dx.length >= 60 };
    });
    return { run: d.run, lines: lines, log: d.loss.log, marks: d.loss.marks, spikes: d.loss.spikes,
             best: d.loss.best, cap: d.loss.cap, nonfinite: d.loss.nonfinite, height: 300, sync: sync };
  }

  function auxSpec(d, p, sync) {
    return { run: d.run, lines: [{ label: p.title + " \u00b7 " + p.tag, color: GREY, x: steps(p.dx), y: p.y,
                                   smooth: p.smooth && p.dx.length >= 60 }],
             log: p.log, marks: [], height: 170, sync: sync, legend: false, title: p.title + " \u00b7 " + p.tag };
  }

  var DEVICE_COLORS = ["#1f2937", "#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04"];

  function resourceSpec(d, p, sync) {
    // system metrics: x is seconds since the run started (or the step when logged per step), so the cursor
    // is synchronised among these panels only, not with the step charts
    var minutes = p.axis !== "step";
    var lines = p.series.map(function (s) {
      var x = steps(s.dx);
      return { label: s.device + " \u00b7 " + s.tag, color: DEVICE_COLORS[s.color % DEVICE_COLORS.length],
               x: minutes ? x.map(function (v) { return v / 60; }) : x, y: s.y, smooth: false };
    });
    return { run: d.run, lines: lines, log: false, marks: p.marks || [], height: 160, legend: false,
             sync: minutes ? sync + "-time" : sync, xname: minutes ? "minutes" : "step",
             stepAt: minutes ? d.resource_steps : null,
             title: p.title + " (" + p.unit + ") \u00b7 " + (minutes ? "minutes since the start" : "step") };
  }

  function drawRun(section) {
    if (!section || section.getAttribute("data-drawn")) { return null; }
    var d = chartData().runs[section.id];
    if (!d) { return null; }
    section.setAttribute("data-drawn", "1");
    var sync = section.id;
    var made = null;
    var lossFig = section.querySelector("figure.fig-loss");
    if (d.loss && lossFig) {
      var box = el("div", "tz-live");
      lossFig.insertBefore(box, lossFig.firstChild);
      lossFig.classList.add("live");
      made = chart(box, lossSpec(d, sync));
    }
    if (d.aux) {
      var auxFig = section.querySelector("figure.fig-aux");
      if (!auxFig) {
        auxFig = el("figure", "fig-aux");
        (lossFig || section.querySelector(".run-grid")).insertAdjacentElement("afterend", auxFig);
      }
      var grid = el("div", "tz-live tz-aux-grid");
      var across = Math.min(d.aux.length, 3);
      grid.style.gridTemplateColumns = "repeat(" + across + ", minmax(0, 1fr))";
      auxFig.insertBefore(grid, auxFig.firstChild);
      auxFig.classList.add("live");
      auxFig.style.maxWidth = "none";
      var cellWidth = function () { return Math.floor((grid.clientWidth - 12 * (across - 1)) / across); };
      d.aux.forEach(function (p) {
        var cell = el("div", "tz-aux-cell");
        grid.appendChild(cell);
        var spec = auxSpec(d, p, sync);
        spec.width = cellWidth;
        chart(cell, spec);
      });
    }
    if (d.resources) {
      var resFig = section.querySelector("figure.fig-resources");
      if (resFig) {
        var rgrid = el("div", "tz-live tz-aux-grid");
        var racross = Math.min(d.resources.length, 3);
        rgrid.style.gridTemplateColumns = "repeat(" + racross + ", minmax(0, 1fr))";
        resFig.insertBefore(rgrid, resFig.firstChild);
        resFig.classList.add("live");
        resFig.style.maxWidth = "none";
        var rcell = function () { return Math.floor((rgrid.clientWidth - 12 * (racross - 1)) / racross); };
        d.resources.forEach(function (p) {
          var cell = el("div", "tz-aux-cell");
          rgrid.appendChild(cell);
          var spec = resourceSpec(d, p, sync);
          spec.width = rcell;
          chart(cell, spec);
        });
      }
    }
    return made;
  }

  window.tanalyzeCharts = { draw: function (id) { return drawRun(document.getElementById(id)); },
                            setSmoothing: setSmoothing, ema: ema };
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.run"));
  // Sections already in view are drawn now; the others when they come near it.
  var now = 0;
  while (now < sections.length && sections[now].getBoundingClientRect().top < window.innerHeight + 400) {
    drawRun(sections[now]);
    now += 1;
  }
  sections = sections.slice(now);
  if ("IntersectionObserver" in window) {
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (e.isIntersecting) { seen.unobserve(e.target); drawRun(e.target); }
      });
    }, { rootMargin: "400px 0px" });
    sections.forEach(function (s) { seen.observe(s); });
  } else {
    sections.forEach(drawRun);
  }
})();
