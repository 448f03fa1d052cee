// Shared by the disk and run charts: numbers for people, colours, limit lines and the JSON fetch.
// Loaded after Chart.js, its date adapter and the annotation and zoom plugins (all deferred, in order).
(function () {
  "use strict";

  // The same rules as jobs/units.py, so a chart and the table beside it print a number alike.
  function sig3(value) {
    return Number(value.toPrecision(3)).toString();
  }

  function scaled(value, steps) {
    for (const [factor, suffix] of steps) {
      if (Math.abs(value) >= factor) {
        const v = value / factor;
        return (v < 1000 ? sig3(v) : Math.round(v).toLocaleString("en-US")) + suffix;
      }
    }
    return sig3(value);
  }

  const fmt = {
    iops(value) {
      if (value == null) return "—";
      if (Math.abs(value) < 1000) return (Number.isInteger(value) ? value : sig3(value)) + " IOPS";
      return scaled(value, [[1e6, "M"], [1e3, "k"]]) + " IOPS";
    },
    // Axis ticks: the unit is in the axis title, so only the number.
    iopsTick(value) {
      if (Math.abs(value) < 1000) return sig3(value);
      return scaled(value, [[1e6, "M"], [1e3, "k"]]);
    },
    exact(value) {
      return Math.round(value).toLocaleString("en-US");
    },
    micros(value) {
      if (value == null) return "—";
      if (Math.abs(value) >= 1e6) return sig3(value / 1e6) + " s";
      if (Math.abs(value) >= 1000) return sig3(value / 1000) + " ms";
      return sig3(value) + " µs";
    },
    bytesPerS(value) {
      if (value == null) return "—";
      const units = [[2 ** 40, "TiB/s"], [2 ** 30, "GiB/s"], [2 ** 20, "MiB/s"], [2 ** 10, "KiB/s"]];
      for (const [factor, unit] of units) {
        if (Math.abs(value) >= factor) return sig3(value / factor) + " " + unit;
      }
      return Math.round(value) + " B/s";
    },
    bytes(value) {
      if (value == null) return "";
      const units = [[2 ** 20, " MiB"], [2 ** 10, " KiB"]];
      for (const [factor, unit] of units) {
        if (value >= factor && value % factor === 0) return value / factor + unit;
      }
      return value + " B";
    },
    percent(ratio) {
      return Math.round(ratio * 100) + "%";
    },
    // A moment in the reader's time zone, as the chart tooltips print it.
    when(date) {
      const pad = (n) => String(n).padStart(2, "0");
      return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + " " + pad(date.getHours()) + ":" + pad(date.getMinutes());
    },
    // Seconds since a run started: 45 s, 2:05, 1:02:05.
    clock(seconds) {
      const s = Math.round(seconds);
      if (s < 60) return s + " s";
      const h = Math.floor(s / 3600);
      const m = Math.floor((s % 3600) / 60);
      const rest = String(s % 60).padStart(2, "0");
      return h ? h + ":" + String(m).padStart(2, "0") + ":" + rest : m + ":" + rest;
    },
  };

  // Log axes label only 1, 2 and 5 times a power of ten, so the ticks never crowd.
  function logTick(format) {
    return function (value) {
      const mantissa = value / Math.pow(10, Math.floor(Math.log10(value) + 1e-9));
      return [1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6) ? format(value) : "";
    };
  }

  // Colour-blind-safe hues (Okabe–Ito), one per profile; directions and percentiles vary the dash.
  const palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];

  // Horizontal limit lines: same value, one line, its label naming what shares it.
  function limitLines(lines) {
    const merged = new Map();
    // A burst equal to the baseline (a throughput cap binding at a large block size) is no line of its own.
    const baselines = new Set(lines.filter((l) => l.kind === "baseline").map((l) => l.value));
    for (const line of lines) {
      if (!line.value || (line.kind === "burst" && baselines.has(line.value))) continue;
      const key = line.kind + ":" + line.value;
      const entry = merged.get(key) || { ...line, tags: [] };
      if (line.tag && !entry.tags.includes(line.tag)) entry.tags.push(line.tag);
      merged.set(key, entry);
    }
    const distinct = new Set([...merged.values()].map((l) => l.kind)).size < merged.size;
    const out = {};
    let n = 0;
    for (const line of merged.values()) {
      const burst = line.kind === "burst";
      const name = burst ? "burst" : "theoretical";
      const tags = distinct && line.tags.length ? " at " + line.tags.join(", ") : "";
      out["limit" + n++] = {
        type: "line",
        // Under the data: a label must never hide a measured point.
        drawTime: "beforeDatasetsDraw",
        yMin: line.value,
        yMax: line.value,
        borderColor: burst ? "#7a5af8" : "#b42318",
        borderWidth: 2,
        borderDash: burst ? [2, 4] : [8, 4],
        label: {
          display: true,
          content: name + " " + fmt.exact(line.value) + " IOPS" + tags,
          position: burst ? "end" : "start",
          backgroundColor: "rgba(255,255,255,.8)",
          color: burst ? "#5925dc" : "#912018",
          font: { size: 11, weight: "600" },
          padding: 3,
        },
      };
    }
    return out;
  }

  async function getJSON(url) {
    const response = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    let data = null;
    try {
      data = await response.json();
    } catch (err) {
      data = null;
    }
    if (!response.ok) {
      const why = data && data.error ? data.error : "the server answered " + response.status;
      throw new Error(why);
    }
    return data;
  }

  function baseOptions() {
    return {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      parsing: false,
      normalized: true,
      interaction: { mode: "nearest", intersect: false, axis: "xy" },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 14, boxHeight: 2, usePointStyle: false, generateLabels: shortLabels } },
        tooltip: { displayColors: true },
      },
    };
  }

  // On a phone a long series name ("4k randread QD32 numjobs=4 — total") would run past the canvas edge.
  function shortLabels(chart) {
    const labels = Chart.defaults.plugins.legend.labels.generateLabels(chart);
    const most = chart.width < 500 ? 30 : 80;
    return labels.map((l) => (l.text.length > most ? { ...l, text: l.text.slice(0, most - 1) + "…" } : l));
  }

  // A chart's box grows with its legend, so that many series never squeeze the plot (on a phone the legend
  // takes a line per series).
  function fitHeight(canvas, plot, series) {
    const box = canvas.parentElement;
    const narrow = box.clientWidth < 600;
    const rows = narrow ? series : Math.ceil(series / 4);
    box.style.height = (narrow ? plot * 0.8 : plot) + 70 + rows * 20 + "px";
  }

  // Seconds axis: a step of 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min or 1, 2, 6, 12 h, whichever gives
  // at most `most` ticks.
  function secondsStep(span, most) {
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
    return steps.find((s) => span / s <= most) || Math.ceil(span / most);
  }

  if (window.Chart) {
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = "#1d232b";
  }

  window.benchCharts = { fmt, logTick, palette, limitLines, getJSON, baseOptions, fitHeight, secondsStep };
})();
