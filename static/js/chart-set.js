// A sweep's page: IOPS along the swept axis (one line per curve, the theoretical baseline and burst at each
// point's block size, the knee marked) and latency against IOPS (the hockey stick: p50, p99 and p99.9 per curve).
// A sweep without a load axis draws each point's IOPS as a bar. Data from /sets/<pk>/series.json.
(function () {
  "use strict";
  const root = document.getElementById("set-charts");
  if (!root || !window.Chart || !window.benchCharts) return;
  const { fmt, logTick, palette, getJSON, baseOptions } = window.benchCharts;
  const status = document.getElementById("set-chart-status");
  const DASHES = { p50_us: [], p99_us: [6, 3], p99_9_us: [2, 3] };
  const NAMES = { p50_us: "p50", p99_us: "p99", p99_9_us: "p99.9" };

  const say = window.benchCharts.figureNote;

  function named(curve, what) {
    return curve.label ? curve.label + " — " + what : what;
  }

  // The x labels of the swept axis: every value any curve has, in order (a category axis keeps a doubling
  // sweep's points evenly apart, as a log axis would).
  function axisLabels(curves) {
    const values = new Set();
    for (const curve of curves) for (const p of curve.points) values.add(p.x);
    return [...values].sort((a, b) => a - b).map(String);
  }

  // The limits at each point's block size, one line per distinct series (a curve of each block size has its own).
  function limitDatasets(curves) {
    const out = [];
    const seen = new Set();
    for (const [kind, key, colour, dash] of [["theoretical", "limit_iops", "#b42318", [8, 4]], ["burst", "burst_iops", "#7a5af8", [2, 4]]]) {
      for (const curve of curves) {
        const data = curve.points.filter((p) => p[key] && (kind !== "burst" || p.burst_iops !== p.limit_iops)).map((p) => ({ x: String(p.x), y: p[key] }));
        if (!data.length) continue;
        const id = kind + JSON.stringify(data);
        if (seen.has(id)) continue;
        seen.add(id);
        out.push({
          label: kind + (curve.block_size ? " at " + curve.block_size : ""),
          data,
          borderColor: colour,
          backgroundColor: colour,
          borderDash: dash,
          borderWidth: 2,
          pointRadius: 0,
          stepped: "middle",
          tension: 0,
        });
      }
    }
    return out;
  }

  function drawIops(data) {
    const curves = data.curves.filter((c) => c.points.some((p) => p.iops != null));
    if (!curves.length) return say("set-iops", "No point has reported IOPS yet: the lines appear as the points end.");
    say("set-iops", "");
    const datasets = [];
    curves.forEach((curve, n) => {
      const colour = palette[n % palette.length];
      datasets.push({
        label: named(curve, "IOPS"),
        data: curve.points.filter((p) => p.iops != null).map((p) => ({ x: String(p.x), y: p.iops })),
        borderColor: colour,
        backgroundColor: colour,
        borderWidth: 2,
        pointRadius: 3.5,
        tension: 0,
      });
      if (curve.knee) {
        datasets.push({
          label: named(curve, "knee at " + data.axis_name + " " + curve.knee.axis),
          data: [{ x: String(curve.knee.axis), y: curve.knee.iops }],
          borderColor: colour,
          backgroundColor: "#fff",
          pointStyle: "rectRot",
          pointRadius: 9,
          pointBorderWidth: 2.5,
          showLine: false,
        });
      }
    });
    datasets.push(...limitDatasets(curves));
    const options = baseOptions();
    options.parsing = true;
    options.normalized = false;
    options.interaction = { mode: "nearest", intersect: false, axis: "x" };
    options.scales = {
      x: { type: "category", labels: axisLabels(curves), title: { display: true, text: data.axis_name + " (the swept axis)" } },
      y: { beginAtZero: true, title: { display: true, text: "IOPS (I/O operations per second)" }, ticks: { callback: fmt.iopsTick } },
    };
    options.plugins.tooltip.callbacks = {
      title: (items) => (items.length ? data.axis_name + " " + items[0].label : ""),
      label: (ctx) => ctx.dataset.label + ": " + fmt.iops(ctx.parsed.y),
    };
    const canvas = document.getElementById("set-iops-chart");
    window.benchCharts.fitHeight(canvas, 360, datasets.length);
    new Chart(canvas, { type: "line", data: { datasets }, options });
  }

  function drawLatency(data) {
    const datasets = [];
    data.curves.forEach((curve, n) => {
      const colour = palette[n % palette.length];
      for (const key of Object.keys(NAMES)) {
        const points = curve.points.filter((p) => p.iops != null && p[key] != null);
        if (!points.length) continue;
        datasets.push({
          label: named(curve, NAMES[key]),
          data: points.map((p) => ({ x: p.iops, y: p[key], at: p.x })),
          borderColor: colour,
          backgroundColor: colour,
          borderDash: DASHES[key],
          borderWidth: key === "p99_us" ? 2.5 : 1.5,
          pointRadius: 3,
          tension: 0,
        });
      }
    });
    if (!datasets.length) return say("set-latency", "No point has reported latency yet (an ndisk64 report has none).");
    say("set-latency", "");
    const narrow = root.clientWidth < 600;
    const options = baseOptions();
    options.interaction = { mode: "nearest", intersect: true };
    options.scales = {
      x: { type: "linear", beginAtZero: true, title: { display: true, text: "measured IOPS" }, ticks: { callback: fmt.iopsTick } },
      y: {
        type: "logarithmic",
        title: { display: true, text: narrow ? "latency (log scale)" : "completion latency (log scale: µs, ms, s)" },
        ticks: { callback: logTick(fmt.micros), autoSkip: false },
        afterDataLimits(scale) {
          scale.max *= 1.5;
          scale.min /= 1.5;
        },
      },
    };
    options.plugins.tooltip.callbacks = {
      label: (ctx) => ctx.dataset.label + " at " + data.axis_name + " " + ctx.raw.at + ": " + fmt.micros(ctx.parsed.y) + ", " + fmt.iops(ctx.parsed.x),
    };
    const canvas = document.getElementById("set-latency-chart");
    window.benchCharts.fitHeight(canvas, 360, datasets.length);
    new Chart(canvas, { type: "line", data: { datasets }, options });
  }

  function drawBars(data) {
    const points = data.points;
    if (!points.some((p) => p.iops != null)) return say("set-iops", "No point has reported IOPS yet: the bars appear as the points end.");
    say("set-iops", "");
    const labels = points.map((p) => p.label);
    const datasets = [{
      label: "IOPS",
      data: points.map((p) => p.iops),
      backgroundColor: palette[0],
      borderWidth: 0,
    }];
    if (points.some((p) => p.limit_iops)) {
      datasets.push({
        type: "line",
        label: "theoretical at the point's block size",
        data: points.map((p) => p.limit_iops || null),
        borderColor: "#b42318",
        backgroundColor: "#b42318",
        borderDash: [8, 4],
        borderWidth: 2,
        pointRadius: 3,
        showLine: false,
      });
    }
    const options = baseOptions();
    options.parsing = true;
    options.normalized = false;
    options.interaction = { mode: "index", intersect: false };
    options.scales = {
      x: { type: "category", ticks: { maxRotation: 60, autoSkip: false } },
      y: { beginAtZero: true, title: { display: true, text: "IOPS (I/O operations per second)" }, ticks: { callback: fmt.iopsTick } },
    };
    options.plugins.tooltip.callbacks = { label: (ctx) => ctx.dataset.label + ": " + fmt.iops(ctx.parsed.y) };
    new Chart(document.getElementById("set-iops-chart"), { type: "bar", data: { labels, datasets }, options });
  }

  function describe(data) {
    if (!data.axis) return "Each point's IOPS; the limit is the disk's theoretical IOPS at the point's block size.";
    const knees = data.curves.filter((c) => c.knee).map((c) => named(c, c.knee_text));
    const text = knees.length ? knees.join("; ") + " (the diamond)." : "No knee on this sweep's curves.";
    return text + (data.final ? "" : " The sweep is still running: reload the page for the latest points.");
  }

  async function load() {
    status.textContent = "Loading…";
    let data;
    try {
      data = await getJSON(root.dataset.seriesUrl);
    } catch (err) {
      status.textContent = "Could not load the chart data: " + err.message + ". Reload the page to try again.";
      return;
    }
    status.textContent = describe(data);
    if (data.axis) {
      drawIops(data);
      drawLatency(data);
    } else {
      drawBars(data);
    }
  }

  load();
})();
