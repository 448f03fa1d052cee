// The disk page: IOPS of every finished run over time beside the theoretical limits, and their latency.
// Data from /disks/<pk>/series.json (downsampled on the server); the filters refetch it.
(function () {
  "use strict";
  const root = document.getElementById("disk-charts");
  if (!root || !window.Chart || !window.benchCharts) return;
  const { fmt, logTick, palette, limitLines, getJSON, baseOptions, fitHeight, zoneTitle } = window.benchCharts;

  const form = document.getElementById("chart-filters");
  const profileSelect = document.getElementById("chart-profile");
  const rangeSelect = document.getElementById("chart-range");
  const custom = document.getElementById("chart-custom");
  const fromInput = document.getElementById("chart-from");
  const toInput = document.getElementById("chart-to");
  const steadyOnly = document.getElementById("chart-steady");
  const measuredOnly = document.getElementById("chart-measured");
  const status = document.getElementById("chart-status");
  const empty = document.getElementById("chart-empty");
  const drawn = document.getElementById("chart-drawn");
  const resetButton = root.querySelector('[data-zoom="reset"]');
  const picks = document.getElementById("latency-picks");
  const directionPicks = document.getElementById("latency-directions");
  const charts = {};
  let request = 0;
  let shown = null; // the last answer drawn, redrawn when the latency lines picked change

  // ------------------------------------------------------------------ filters, kept in the page's URL

  const params = new URLSearchParams(window.location.search);
  if (params.get("range")) rangeSelect.value = params.get("range");
  // No range asked for: the server draws the shortest that fits the runs, and the select then shows it.
  let fitted = !params.get("range");
  if (params.get("from")) fromInput.value = toLocalInput(params.get("from"));
  if (params.get("to")) toInput.value = toLocalInput(params.get("to"));
  const wantedProfile = params.get("profile") || "";
  steadyOnly.checked = params.get("steady") === "only";
  if (measuredOnly) measuredOnly.checked = params.get("measured") === "disk";
  // The latency lines picked (percentiles and directions), kept in the URL like the filters.
  for (const name of ["percentile", "direction"]) {
    const wanted = params.get(name);
    if (wanted === null) continue;
    const values = wanted.split(",");
    picks.querySelectorAll('input[name="' + name + '"]').forEach((box) => (box.checked = values.includes(box.value)));
  }

  function picked(name) {
    return [...picks.querySelectorAll('input[name="' + name + '"]:checked')].map((box) => box.value);
  }

  // The page's own URL: the filters the server gets, and the latency lines picked.
  function pageQuery() {
    const q = query();
    q.set("percentile", picked("percentile").join(","));
    q.set("direction", picked("direction").join(","));
    return q;
  }

  picks.addEventListener("change", () => {
    window.history.replaceState(null, "", "?" + pageQuery().toString());
    if (!shown || !shown.series.length) return;
    drawLatency(shown);
    if (charts.iops && charts.iops.isZoomedOrPanned()) sync(charts.iops);
  });
  if (wantedProfile) {
    // A placeholder until the first answer brings the profiles' names.
    profileSelect.append(new Option(wantedProfile, wantedProfile));
    profileSelect.value = wantedProfile;
  }
  custom.hidden = rangeSelect.value !== "custom";

  // The inputs are in the page's time zone (the person's), not the browser's.
  function toLocalInput(iso) {
    const ms = Date.parse(iso);
    return isNaN(ms) ? "" : window.benchClock.toInput(ms);
  }

  function query() {
    const q = new URLSearchParams(fitted ? {} : { range: rangeSelect.value });
    if (profileSelect.value) q.set("profile", profileSelect.value);
    if (steadyOnly.checked) q.set("steady", "only");
    if (measuredOnly && measuredOnly.checked) q.set("measured", "disk");
    if (rangeSelect.value === "custom") {
      // The fields hold a wall-clock time in the page's zone; the server gets an exact instant.
      if (fromInput.value) q.set("from", new Date(window.benchClock.fromInput(fromInput.value)).toISOString());
      if (toInput.value) q.set("to", new Date(window.benchClock.fromInput(toInput.value)).toISOString());
    }
    return q;
  }

  rangeSelect.addEventListener("change", () => {
    fitted = rangeSelect.value === "";
    custom.hidden = rangeSelect.value !== "custom";
    if (rangeSelect.value === "custom") fromInput.focus();
    else load();
  });
  profileSelect.addEventListener("change", () => load());
  steadyOnly.addEventListener("change", () => load());
  if (measuredOnly) measuredOnly.addEventListener("change", () => load());
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    load();
  });

  // ------------------------------------------------------------------ zoom and pan (both charts together)

  function sync(source) {
    const { min, max } = source.scales.x;
    for (const chart of Object.values(charts)) {
      if (chart === source) continue;
      chart.zoomScale("x", { min, max }, "none");
    }
    resetButton.disabled = !source.isZoomedOrPanned();
  }

  root.querySelectorAll("[data-zoom]").forEach((button) => {
    button.addEventListener("click", () => {
      const chart = charts.iops;
      if (!chart) return;
      const width = chart.chartArea.right - chart.chartArea.left;
      const action = button.dataset.zoom;
      if (action === "in") chart.zoom({ x: 1.5 }, "none");
      if (action === "out") chart.zoom({ x: 1 / 1.5 }, "none");
      if (action === "earlier") chart.pan({ x: width / 3 }, undefined, "none");
      if (action === "later") chart.pan({ x: -width / 3 }, undefined, "none");
      if (action === "reset") {
        Object.values(charts).forEach((c) => c.resetZoom("none"));
        resetButton.disabled = true;
        return;
      }
      sync(chart);
    });
  });

  // Without hammer.js the zoom plugin cannot pan by dragging; Shift-drag does it here instead.
  function shiftDragPan(chart) {
    if (window.Hammer) return;
    chart.canvas.addEventListener("pointerdown", (event) => {
      if (!event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      let last = event.clientX;
      const move = (e) => {
        chart.pan({ x: e.clientX - last }, undefined, "none");
        last = e.clientX;
      };
      const up = () => {
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
        sync(chart);
      };
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
    });
  }

  function zoomOptions() {
    const done = ({ chart }) => sync(chart);
    return {
      limits: { x: { min: "original", max: "original", minRange: 60 * 1000 } },
      pan: { enabled: true, mode: "x", modifierKey: "shift", onPanComplete: done },
      zoom: {
        mode: "x",
        wheel: { enabled: true, modifierKey: "ctrl" },
        pinch: { enabled: true },
        drag: { enabled: true, threshold: 8, backgroundColor: "rgba(31,111,235,.12)", borderColor: "#1f6feb", borderWidth: 1 },
        onZoomComplete: done,
      },
    };
  }

  // ------------------------------------------------------------------ data -> datasets

  function points(series, extra) {
    const out = new Array(series.x.length);
    for (let i = 0; i < series.x.length; i++) {
      const p = { x: series.x[i], y: series.y[i], run: series.run[i], steady: series.steady ? series.steady[i] : null,
                  warnings: series.warnings ? series.warnings[i] : 0 };
      if (extra) {
        p.efficiency = series.efficiency[i];
        p.limit = series.limit[i];
      }
      out[i] = p;
    }
    return out;
  }

  function notSteady(ctx) {
    return Boolean(ctx.raw && ctx.raw.steady === false);
  }

  // The runs served from burst and the words of each run's warnings come with the page (the series never read
  // the runs table): {"burst": {run: words}, "warnings": {run: [heads]}}.
  const runMarks = (() => {
    const found = document.getElementById("run-marks");
    return found ? JSON.parse(found.textContent) : { burst: {}, warnings: {}, verdicts: {} };
  })();
  const WARNED = "#b54708";

  function fromBurst(p) {
    return Boolean(p && p.run && runMarks.burst[p.run]);
  }

  function warned(p) {
    return Boolean(p && p.warnings);
  }

  // A run with a verdict against its number (client-bound, cache suspected, …: docs/user-guide/verdicts.md).
  const JUDGED = "#7a2e0e";

  function judged(p) {
    return Boolean(p && p.run && runMarks.verdicts && runMarks.verdicts[p.run]);
  }

  // What the point's run was measured under: burst and warnings, a line each for the tooltip. A tooltip does
  // not wrap: on a narrow chart the balance gets a line of its own and a long warning is cut short.
  function flagLines(p, chart) {
    const narrow = chart.width < 500;
    const words = fromBurst(p) ? runMarks.burst[p.run] : "";
    const lines = narrow ? words.split(/ (?=\()/) : [words];
    if (warned(p)) {
      const heads = runMarks.warnings[p.run];
      if (heads) heads.forEach((head) => lines.push("⚠ " + (narrow && head.length > 40 ? head.slice(0, 39) + "…" : head)));
      else lines.push("⚠ " + p.warnings + (p.warnings === 1 ? " warning" : " warnings") + ": see the run's page");
    }
    if (judged(p)) lines.push("✕ not the disk's? " + runMarks.verdicts[p.run].join(", "));
    return lines.filter(Boolean);
  }

  function line(label, data, colour, dash, width, meta) {
    const marked = (ctx) => notSteady(ctx) || fromBurst(ctx.raw) || warned(ctx.raw) || judged(ctx.raw);
    return {
      label,
      data,
      borderColor: colour,
      backgroundColor: colour,
      borderWidth: width,
      borderDash: dash,
      // A run not in steady state is a hollow point, one served from burst a triangle, one with warnings has an
      // amber ring: drawn even where a long series hides the others.
      pointRadius: (ctx) => (fromBurst(ctx.raw) ? 4.5 : marked(ctx) ? 3.5 : data.length > 150 ? 0 : 2.5),
      pointStyle: (ctx) => (fromBurst(ctx.raw) ? "triangle" : judged(ctx.raw) ? "crossRot" : "circle"),
      pointBackgroundColor: (ctx) => (notSteady(ctx) ? "#fff" : colour),
      pointBorderColor: (ctx) => (judged(ctx.raw) ? JUDGED : warned(ctx.raw) ? WARNED : colour),
      pointBorderWidth: (ctx) => (judged(ctx.raw) ? 2.5 : warned(ctx.raw) ? 2.5 : notSteady(ctx) ? 1.5 : 1),
      pointHoverRadius: 5,
      pointHitRadius: 6,
      tension: 0,
      spanGaps: true,
      meta,
    };
  }

  function iopsDatasets(data) {
    const sets = [];
    const rates = data.limits || {};
    data.series.forEach((s, index) => {
      const colour = palette[index % palette.length];
      const name = s.profile.name;
      const both = s.iops.read.x.length && s.iops.write.x.length;
      // The burst limit is the latest run's; a point measured against another baseline (an older spec) gets none.
      const meta = { profile: name, blockSize: s.block_size_bytes, kind: "total", baseline: s.limits.baseline_iops, burst: s.limits.burst_iops,
        // The disk's throughput limit (its cap does not depend on the block size), in the unit it is published in.
        rateLimit: rates.throughput_bytes_per_s, rateBurst: rates.burst_throughput_bytes_per_s, rateUnit: rates.throughput_unit };
      sets.push(line(both ? name + " · total" : name, points(s.iops.total, true), colour, [], 2, meta));
      if (both) {
        sets.push(line(name + " · read", points(s.iops.read), colour, [6, 3], 1.5, { ...meta, kind: "read" }));
        sets.push(line(name + " · write", points(s.iops.write), colour, [2, 3], 1.5, { ...meta, kind: "write" }));
      }
    });
    return sets;
  }

  // Only the lines picked: every profile's p50, p99 and p99.9 of both directions made a legend of up to 24.
  function latencyDatasets(data) {
    const sets = [];
    const dashes = { p50: [], p99: [6, 3], p99_9: [2, 3] };
    const names = { p50: "p50", p99: "p99", p99_9: "p99.9" };
    const percentiles = picked("percentile");
    const wantedDirections = directionPicks.hidden ? ["read", "write"] : picked("direction");
    data.series.forEach((s, index) => {
      const colour = palette[index % palette.length];
      const has = (d) => ["p50", "p99", "p99_9"].some((p) => s.latency_us[d][p].x.length);
      const directions = ["read", "write"].filter(has);
      for (const d of directions.filter((d) => wantedDirections.includes(d))) {
        for (const p of percentiles) {
          const label = s.profile.name + (directions.length > 1 ? " · " + d : "") + " " + names[p];
          const width = p === "p50" ? 2 : 1.5;
          sets.push(line(label, points(s.latency_us[d][p]), d === "write" ? shade(colour) : colour, dashes[p], width, {}));
        }
      }
    });
    return sets;
  }

  // Writes in a darker tone of their profile's colour, so read and write curves of a profile part.
  function shade(hex) {
    const n = parseInt(hex.slice(1), 16);
    const c = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => Math.round(v * 0.6));
    return "rgb(" + c.join(",") + ")";
  }

  function limitsOf(data) {
    const lines = [];
    for (const s of data.series) {
      const tag = s.block_size_bytes ? fmt.bytes(s.block_size_bytes) : s.profile.name;
      lines.push({ kind: "baseline", value: s.limits.baseline_iops, tag });
      lines.push({ kind: "burst", value: s.limits.burst_iops, tag });
    }
    return lines;
  }

  // Vertical markers: change points of the chart's metrics (solid, red when worse, green when better; grey once
  // marked expected) and annotations (dotted blue), labelled at the top.
  function markLines(data, metrics) {
    const marks = data.marks || { changes: [], annotations: [] };
    const out = {};
    const line = (x, color, dash, text) => ({
      type: "line",
      drawTime: "beforeDatasetsDraw",
      xMin: x,
      xMax: x,
      borderColor: color,
      borderWidth: 2,
      borderDash: dash,
      label: {
        display: true,
        content: text,
        position: "start",
        backgroundColor: "rgba(255,255,255,.85)",
        color: "#1d2939",
        font: { size: 11 },
        padding: 3,
      },
    });
    marks.changes
      .filter((c) => metrics.includes(c.metric))
      .forEach((c, i) => {
        const color = c.expected ? "#667085" : c.direction === "worse" ? "#b42318" : "#067647";
        const sign = c.change_percent > 0 ? "+" : "";
        out["change" + i] = line(c.x, color, [], (c.expected ? "expected " : "") + sign + Math.round(c.change_percent) + " % " + c.profile);
      });
    marks.annotations.forEach((a, i) => {
      out["note" + i] = line(a.x, "#1570ef", [2, 3], a.text.length > 40 ? a.text.slice(0, 39) + "…" : a.text);
    });
    return out;
  }

  // A share link's page has no run pages to open (jobs/shares/public.py): its points only tell their run.
  const opensRuns = Boolean(root.dataset.runUrl);
  const runFooter = (items) => (items.length && items[0].raw.run ? "run #" + items[0].raw.run + (opensRuns ? " · click to open" : "") : "");

  function runUrl(id) {
    return root.dataset.runUrl.replace(/0\/$/, id + "/");
  }

  function openRun(event, elements, chart) {
    if (!elements.length || !opensRuns) return;
    const point = chart.data.datasets[elements[0].datasetIndex].data[elements[0].index];
    if (point && point.run) window.location.assign(runUrl(point.run));
  }

  // The axis spans the range asked for, not just the runs in it: a week with runs on two days shows so.
  function timeAxis(data) {
    const axis = {
      type: "time",
      // Every tick carries its day: a week of hourly ticks must not read "6AM 2PM 10PM" without dates.
      time: {
        tooltipFormat: "yyyy-MM-dd HH:mm z",
        displayFormats: { minute: "MMM d HH:mm", hour: "MMM d HH:mm", day: "MMM d", week: "MMM d", month: "MMM yyyy" },
      },
      title: { display: true, text: zoneTitle("run finished") },
      // A phone has room for about four "Nov 21 08:00" labels side by side.
      ticks: { maxRotation: 0, autoSkipPadding: 16, maxTicksLimit: window.innerWidth < 600 ? 3 : 11 },
    };
    if (data.range.from) axis.min = Date.parse(data.range.from);
    if (data.range.to) axis.max = Date.parse(data.range.to);
    // Up to now, plus 2 % of the span: a run that just finished sits inside the chart, not cut in half
    // by its right edge.
    else if (data.range.from) axis.max = Date.now() + 0.02 * (Date.now() - axis.min);
    return axis;
  }

  // ------------------------------------------------------------------ charts

  function steadyWords(p) {
    return p.steady === false ? " · not steady" : p.steady === true ? " · steady" : " · steady state not checked";
  }

  // A tooltip line on a narrow chart, cut where it would run past the screen: at each " · " and ", ".
  function narrowed(text, chart) {
    return chart && chart.width < 500 ? text.split(/ · |, /) : text;
  }

  // Legend entries for the point marks in use (the datasets' own entries name the profiles).
  function withMarkLegend(options, data) {
    const drawnPoints = data.series.flatMap((s) => points(s.iops.total));
    const marks = [];
    if (drawnPoints.some(fromBurst)) marks.push("▲ served from burst (fully or partly)");
    if (drawnPoints.some(warned)) marks.push("◯ amber ring: run with warnings");
    if (drawnPoints.some((p) => p.steady === false)) marks.push("○ hollow: not steady");
    if (drawnPoints.some(judged)) marks.push("✕ a verdict: maybe not the disk's number");
    const legend = options.plugins.legend;
    const profiles = legend.labels.generateLabels;
    legend.labels.generateLabels = (chart) =>
      profiles(chart).concat(marks.map((text) => ({ text, fillStyle: "transparent", strokeStyle: "transparent", lineWidth: 0, hidden: false })));
    legend.onClick = (event, item, legendBox) => {
      if (item.datasetIndex !== undefined) Chart.defaults.plugins.legend.onClick.call(legendBox, event, item, legendBox);
    };
    return marks.length;
  }

  function drawIops(data) {
    const datasets = iopsDatasets(data);
    const lines = limitLines(limitsOf(data));
    const highest = Math.max(0, ...Object.values(lines).map((l) => l.yMin));
    const options = baseOptions();
    options.scales = {
      x: timeAxis(data),
      y: {
        beginAtZero: true,
        // Room above the highest limit, so its line and label show even when runs stay far below it.
        suggestedMax: highest * 1.08,
        title: { display: true, text: "IOPS (I/O operations per second)" },
        ticks: { callback: fmt.iopsTick },
      },
    };
    options.plugins.annotation = { annotations: { ...lines, ...environmentMarks(), ...markLines(data, ["iops"]) } };
    options.plugins.zoom = zoomOptions();
    options.plugins.tooltip.callbacks = {
      label(ctx) {
        const p = ctx.raw;
        const meta = ctx.dataset.meta;
        let text = ctx.dataset.label + ": " + fmt.iops(p.y);
        if (meta.kind === "total" && p.limit) text += " · " + fmt.efficiency(p.y, p.limit, p.limit === meta.baseline ? meta.burst : null);
        return narrowed(text + steadyWords(p), ctx.chart);
      },
      afterLabel(ctx) {
        const meta = ctx.dataset.meta;
        const rate = meta.blockSize ? ctx.raw.y * meta.blockSize : null;
        const moved = rate != null ? fmt.rateBeside(rate, meta.rateUnit) + " at " + fmt.bytes(meta.blockSize) + " blocks" : "";
        // Throughput efficiency beside the IOPS one: the moved rate against the throughput limit.
        const ofRate = rate != null && meta.kind === "total" && meta.rateLimit ? fmt.efficiency(rate, meta.rateLimit, meta.rateBurst, meta.rateUnit) : "";
        return [moved, ...[].concat(ofRate ? narrowed("throughput " + ofRate, ctx.chart) : []), ...flagLines(ctx.raw, ctx.chart)].filter(Boolean);
      },
      footer: runFooter,
    };
    options.onClick = openRun;
    options.onHover = (event, elements) => {
      event.native.target.style.cursor = elements.length && opensRuns ? "pointer" : "default";
    };
    const legendMarks = withMarkLegend(options, data);
    const canvas = document.getElementById("iops-chart");
    fitHeight(canvas, 360, datasets.length + legendMarks);
    return replace("iops", canvas, { type: "line", data: { datasets }, options });
  }

  // A thin vertical line at each run whose environment differs from the run before it: the page's list under the
  // chart says what changed, and brings the marks (the series never read the runs table).
  function environmentMarks() {
    const marks = {};
    const found = document.getElementById("environment-marks");
    const changes = found ? JSON.parse(found.textContent) : [];
    changes.filter((m) => m.x).forEach((m, i) => {
      marks["env" + i] = {
        type: "line",
        drawTime: "beforeDatasetsDraw",
        xMin: m.x,
        xMax: m.x,
        borderColor: "#667085",
        borderWidth: 1,
        borderDash: [3, 3],
        label: { display: true, content: "env", position: "start", font: { size: 10 }, padding: 2,
                 backgroundColor: "rgba(102, 112, 133, 0.85)" },
      };
    });
    return marks;
  }

  function drawLatency(data) {
    const datasets = latencyDatasets(data);
    const options = baseOptions();
    options.scales = {
      x: timeAxis(data),
      y: {
        type: "logarithmic",
        title: { display: true, text: "completion latency (log scale: µs, ms, s)" },
        ticks: { callback: logTick(fmt.micros), autoSkip: false },
        // Head room on a log axis, so the slowest point is not cut in half by the chart's edge.
        afterDataLimits(scale) {
          scale.max *= 1.5;
          scale.min /= 1.5;
        },
      },
    };
    options.plugins.annotation = { annotations: markLines(data, ["p99_latency"]) };
    options.plugins.zoom = zoomOptions();
    options.plugins.tooltip.callbacks = {
      label: (ctx) => narrowed(ctx.dataset.label + ": " + fmt.micros(ctx.raw.y) + steadyWords(ctx.raw), ctx.chart),
      afterLabel: (ctx) => flagLines(ctx.raw, ctx.chart),
      footer: runFooter,
    };
    options.onClick = openRun;
    const canvas = document.getElementById("latency-chart");
    fitHeight(canvas, 300, datasets.length);
    return replace("latency", canvas, { type: "line", data: { datasets }, options });
  }

  function replace(name, canvas, config) {
    if (charts[name]) charts[name].destroy();
    charts[name] = new Chart(canvas, config);
    shiftDragPan(charts[name]);
    return charts[name];
  }

  // ------------------------------------------------------------------ loading

  function fillProfiles(profiles) {
    const chosen = profileSelect.value || wantedProfile;
    profileSelect.replaceChildren(new Option("All profiles", ""));
    for (const p of profiles) {
      const runs = p.runs === 1 ? "1 run" : p.runs.toLocaleString("en-US") + " runs";
      profileSelect.append(new Option(p.name + " (" + runs + ")", p.key));
    }
    if ([...profileSelect.options].some((o) => o.value === chosen)) profileSelect.value = chosen;
  }

  function showEmpty(data) {
    const filtered = data.range.name !== "all" || data.profile;
    empty.replaceChildren();
    const message = document.createElement("p");
    if (!data.profiles.length) {
      message.textContent = "No finished runs on this disk yet — choose a profile under Run now and press Run now, or import results.";
    } else {
      message.textContent = "No finished runs in this range — run a profile or widen the range.";
      const shown = data.profile ? data.profiles.filter((p) => p.key === data.profile) : data.profiles;
      const last = shown.map((p) => p.last_finished_at).sort().pop();
      if (last) message.textContent += " The latest run finished " + fmt.when(new Date(last)) + ".";
    }
    empty.append(message);
    if (data.profiles.length && filtered) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "secondary";
      button.textContent = "Show all runs of all time";
      button.addEventListener("click", () => {
        rangeSelect.value = "all";
        fitted = false;
        profileSelect.value = "";
        custom.hidden = true;
        load();
      });
      empty.append(button);
    }
    empty.hidden = false;
    drawn.hidden = true;
  }

  function describe(data) {
    const runs = data.runs.toLocaleString("en-US") + (data.runs === 1 ? " finished run" : " finished runs");
    const thinned = data.series.some((s) => s.downsampled)
      ? " Long series are thinned to at most " + data.max_points.toLocaleString("en-US") + " points each, keeping every low and high."
      : "";
    const summary = data.series.map((s) => s.profile.name + ": " + latest(s)).join("; ");
    const range = data.range.fitted ? " The time range fits the runs; choose another above." : "";
    const steady = data.steady === "only"
      ? " Steady runs only."
      : " Hollow points are runs not in steady state.";
    const totals = data.series.flatMap((s) => points(s.iops.total));
    const marks = (totals.some(fromBurst) ? " Triangles are runs served from burst credits." : "") +
      (totals.some(warned) ? " Amber rings are runs with warnings." : "") +
      (totals.some(judged) ? " Crosses are runs with a verdict against their number (client-bound, cache, …)." : "") +
      (data.measured === "disk" ? " Runs with a verdict are left out." : "");
    return runs + (summary ? " — latest " + summary + "." : ".") + range + steady + marks + thinned;
  }

  function latest(s) {
    const t = s.iops.total;
    const i = t.x.length - 1;
    const limit = t.limit[i];
    const burst = limit === s.limits.baseline_iops ? s.limits.burst_iops : null;
    return fmt.iops(t.y[i]) + (limit ? " (" + fmt.efficiency(t.y[i], limit, burst) + ")" : "");
  }

  async function load() {
    const mine = ++request;
    const q = query();
    window.history.replaceState(null, "", "?" + pageQuery().toString());
    status.textContent = "Loading…";
    root.setAttribute("aria-busy", "true");
    let data;
    try {
      data = await getJSON(root.dataset.seriesUrl + "?" + q.toString());
    } catch (err) {
      if (mine !== request) return;
      status.textContent = "Could not load the chart data: " + err.message + ". Change the filters or reload the page.";
      root.removeAttribute("aria-busy");
      return;
    }
    if (mine !== request) return; // a newer request is on its way
    root.removeAttribute("aria-busy");
    fillProfiles(data.profiles);
    if (data.range.fitted) rangeSelect.value = data.range.name;
    if (!data.series.length) {
      status.textContent = "";
      Object.values(charts).forEach((c) => c.destroy());
      for (const key of Object.keys(charts)) delete charts[key];
      showEmpty(data);
      return;
    }
    empty.hidden = true;
    drawn.hidden = false;
    status.textContent = describe(data);
    shown = data;
    // The direction boxes only where some profile has both: one direction needs no choosing.
    const drawsDirection = (d) => data.series.some((s) => ["p50", "p99", "p99_9"].some((p) => s.latency_us[d][p].x.length));
    directionPicks.hidden = !(drawsDirection("read") && drawsDirection("write"));
    drawIops(data);
    drawLatency(data);
    resetButton.disabled = true;
  }

  load();
})();
