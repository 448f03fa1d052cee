// The run page: IOPS second by second against the limit line, the latency percentile curve and, from fio
// json+ output, the latency histogram. Data from /runs/<pk>/series.json.
(function () {
  "use strict";
  const root = document.getElementById("run-charts");
  if (!root || !window.Chart || !window.benchCharts) return;
  const { fmt, logTick, limitLines, getJSON, baseOptions, secondsAxis } = window.benchCharts;
  const status = document.getElementById("run-chart-status");
  const colours = { read: "#0072B2", write: "#D55E00", total: "#1d232b" };

  function say(id, text) {
    const box = document.getElementById(id);
    box.querySelector(".chart-box").hidden = Boolean(text);
    const note = box.querySelector(".chart-empty");
    note.textContent = text || "";
    note.hidden = !text;
  }

  function xy(series) {
    return series.x.map((x, i) => ({ x, y: series.y[i] }));
  }

  function drawIops(data) {
    const s = data.samples;
    if (!s.count) {
      return say("run-iops", "No per-second samples for this run: benchweb's fio runs record them (--status-interval); " +
        "imported text reports and ndisk64 output have none. The result table above has the run's totals.");
    }
    say("run-iops", "");
    const datasets = [];
    const mixed = s.read.x.length && s.write.x.length;
    for (const d of ["read", "write", "total"]) {
      if (!s[d].x.length) continue;
      datasets.push({
        label: d === "total" ? "total" : d,
        data: xy(s[d]),
        borderColor: colours[d],
        backgroundColor: colours[d],
        borderWidth: d === "total" || !mixed ? 2 : 1.5,
        borderDash: d === "total" ? [] : mixed ? [6, 3] : [],
        pointRadius: s[d].x.length > 120 ? 0 : 2,
        pointHitRadius: 6,
        tension: 0,
      });
    }
    const lines = limitLines([
      { kind: "baseline", value: data.limits.baseline_iops },
      { kind: "burst", value: data.limits.burst_iops },
    ]);
    const highest = Math.max(0, ...Object.values(lines).map((l) => l.yMin));
    const span = Math.max(...datasets.map((d) => d.data[d.data.length - 1].x));
    const narrow = root.clientWidth < 600;
    const options = baseOptions();
    options.interaction = { mode: "index", intersect: false, axis: "x" };
    options.scales = {
      x: secondsAxis("time since the run started (s, then m:ss)", 0, span, narrow),
      y: {
        beginAtZero: true,
        suggestedMax: highest * 1.08,
        title: { display: true, text: "IOPS (I/O operations per second)" },
        ticks: { callback: fmt.iopsTick },
      },
    };
    options.plugins.annotation = { annotations: lines };
    options.plugins.tooltip.callbacks = {
      title: (items) => (items.length ? "at " + fmt.clock(items[0].parsed.x) : ""),
      label(ctx) {
        const limit = data.limits.baseline_iops;
        // Efficiency is of the total: the total line, or the one direction a single-direction run has.
        const counts = limit && (!mixed || ctx.dataset.label === "total");
        const share = counts ? " · " + fmt.efficiency(ctx.parsed.y, limit, data.limits.burst_iops) : "";
        return ctx.dataset.label + ": " + fmt.iops(ctx.parsed.y) + share;
      },
    };
    new Chart(document.getElementById("run-iops-chart"), { type: "line", data: { datasets }, options });
  }

  // The host under the IOPS chart, on the same seconds: CPU, pressure and each device's %util, all in %.
  const hostColours = ["#1d232b", "#E69F00", "#CC79A7", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#F0E442"];

  function drawHost(data, span) {
    const t = data.telemetry;
    if (!t || !t.count) {
      return say("run-host", "No host telemetry for this run: benchweb reads it from Linux's /proc while a run of " +
        "this version runs (imported results, ndisk64 hosts without /proc and runs from before have none).");
    }
    say("run-host", "");
    const lines = [...Object.values(t.lines), ...Object.values(t.devices)];
    const datasets = lines.map((line, i) => ({
      label: line.label,
      data: line.points,
      borderColor: hostColours[i % hostColours.length],
      backgroundColor: hostColours[i % hostColours.length],
      borderWidth: 1.5,
      borderDash: i >= Object.keys(t.lines).length ? [] : [4, 3],
      pointRadius: 0,
      pointHitRadius: 6,
      tension: 0,
    }));
    const options = baseOptions();
    options.interaction = { mode: "index", intersect: false, axis: "x" };
    options.scales = {
      x: secondsAxis("time since the run started (s, then m:ss)", 0, span, root.clientWidth < 600),
      y: { min: 0, max: 100, title: { display: true, text: "% (of CPUs, of the second)" }, ticks: { callback: (v) => v + "%" } },
    };
    options.plugins.tooltip.callbacks = {
      title: (items) => (items.length ? "at " + fmt.clock(items[0].parsed.x) : ""),
      label: (ctx) => ctx.dataset.label + ": " + ctx.parsed.y.toFixed(1) + "%",
    };
    window.benchCharts.fitHeight(document.getElementById("run-host-chart"), 220, datasets.length);
    new Chart(document.getElementById("run-host-chart"), { type: "line", data: { datasets }, options });
  }

  function drawPercentiles(data) {
    const curve = data.percentiles;
    const directions = ["read", "write"].filter((d) => curve[d]);
    if (!directions.length) return say("run-percentiles", "No latency percentiles in this run's result.");
    say("run-percentiles", "");
    const datasets = directions.map((d) => ({
      label: d,
      data: curve[d],
      borderColor: colours[d],
      backgroundColor: colours[d],
      borderWidth: 2,
      pointRadius: 3.5,
      tension: 0,
    }));
    const options = baseOptions();
    options.parsing = true;
    options.normalized = false;
    options.interaction = { mode: "index", intersect: false };
    options.scales = {
      x: { type: "category", title: { display: true, text: "percentile of completions (max = slowest I/O)" } },
      y: {
        type: "logarithmic",
        // A phone's chart is shorter than the long title.
        title: { display: true, text: root.clientWidth < 600 ? "latency (log scale)" : "completion latency (log scale: µs, ms, s)" },
        ticks: { callback: logTick(fmt.micros), autoSkip: false },
        afterDataLimits(scale) {
          scale.max *= 1.5;
          scale.min /= 1.5;
        },
      },
    };
    options.plugins.tooltip.callbacks = {
      label: (ctx) => ctx.dataset.label + " " + ctx.label + ": " + fmt.micros(ctx.parsed.y),
    };
    new Chart(document.getElementById("run-percentile-chart"), { type: "line", data: { labels: curve.labels, datasets }, options });
  }

  function drawHistogram(data) {
    const h = data.histogram;
    if (!h) {
      return say("run-histogram", "No latency histogram: it needs fio's json+ output (latency bins). " +
        "Import a run's --output-format=json+ file to see the distribution.");
    }
    say("run-histogram", "");
    const edges = h.edges_us;
    const labels = edges.slice(0, -1).map((low) => fmt.micros(low));
    const datasets = ["read", "write"].filter((d) => h[d]).map((d) => ({
      label: d + " (" + h[d].total.toLocaleString("en-US") + " I/Os)",
      data: h[d].percent,
      backgroundColor: colours[d],
      borderWidth: 0,
      barPercentage: 1,
      categoryPercentage: 0.9,
    }));
    const options = baseOptions();
    options.parsing = true;
    options.normalized = false;
    options.interaction = { mode: "index", intersect: false };
    options.scales = {
      x: {
        type: "category",
        title: { display: true, text: "completion latency (log-spaced bins, lower edge)" },
        ticks: { maxRotation: 0, autoSkipPadding: 12 },
      },
      y: {
        beginAtZero: true,
        title: { display: true, text: "% of the direction's I/Os" },
        ticks: { callback: (v) => v + "%" },
      },
    };
    options.plugins.tooltip.callbacks = {
      title: (items) => (items.length ? fmt.micros(edges[items[0].dataIndex]) + " – " + fmt.micros(edges[items[0].dataIndex + 1]) : ""),
      label(ctx) {
        const d = ctx.datasetIndex === 0 && h.read ? "read" : "write";
        return d + ": " + ctx.parsed.y.toFixed(ctx.parsed.y < 1 ? 2 : 1) + "% (" + h[d].counts[ctx.dataIndex].toLocaleString("en-US") + " I/Os)";
      },
    };
    new Chart(document.getElementById("run-histogram-chart"), { type: "bar", data: { labels, datasets }, options });
  }

  // The IOPS chart's last second, so that the host chart below shares its axis (the host's own, without samples).
  function iopsSpan(data) {
    const ends = ["read", "write", "total"].map((d) => data.samples[d].x).filter((x) => x.length).map((x) => x[x.length - 1]);
    const host = data.telemetry ? [...Object.values(data.telemetry.lines), ...Object.values(data.telemetry.devices)] : [];
    const hostEnds = host.filter((l) => l.points.length).map((l) => l.points[l.points.length - 1].x);
    return Math.max(1, ...(ends.length ? ends : hostEnds));
  }

  // The result as the tool printed it (jobs/figures.py), or the stored number in full: never "20k".
  function measured(r) {
    return r.total_printed || fmt.exact(r.total_iops) + " IOPS";
  }

  function describe(data) {
    const parts = [];
    const r = data.result;
    if (r.total_iops != null && data.limits.baseline_iops) {
      parts.push("Measured " + measured(r) + ": " + fmt.efficiency(r.total_iops, data.limits.baseline_iops, data.limits.burst_iops) +
        " (the theoretical limit at this block size" + (data.limits.binding ? "; the " + (data.limits.binding === "iops" ? "IOPS" : data.limits.binding) + " cap binds" : "") + ").");
    } else if (r.total_iops != null) {
      parts.push("Measured " + measured(r) + "; this disk has no theoretical limit to compare with (set its spec).");
    }
    if (data.samples.downsampled) {
      parts.push(data.samples.count.toLocaleString("en-US") + " per-second samples, thinned to " + data.max_points.toLocaleString("en-US") + " points per line.");
    }
    return parts.join(" ");
  }

  async function load() {
    if (root.dataset.final !== "1") {
      status.textContent = "The charts appear when the run has finished; the progress above updates by itself.";
      root.querySelectorAll(".chart-figure").forEach((f) => (f.hidden = true));
      return;
    }
    status.textContent = "Loading…";
    let data;
    try {
      data = await getJSON(root.dataset.seriesUrl);
    } catch (err) {
      status.textContent = "Could not load the chart data: " + err.message + ". Reload the page to try again.";
      return;
    }
    status.textContent = describe(data);
    drawIops(data);
    drawHost(data, iopsSpan(data));
    drawPercentiles(data);
    drawHistogram(data);
  }

  load();
})();
