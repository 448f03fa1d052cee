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

  // jobs/limits/catalog.py's THROUGHPUT_UNITS.
  const RATE_UNITS = { "B/s": 1, "KB/s": 1e3, "KiB/s": 2 ** 10, "MB/s": 1e6, "MiB/s": 2 ** 20, "GB/s": 1e9 };
  const ABOVE = "above the promise: cache, burst or a wrong spec?";

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
    // A measured rate beside a limit, as jobs/limits/measured.py words it: benchweb's figure first and, where
    // the limit is published in another unit, the same rate in that unit ("176 MiB/s = 184.5 MB/s").
    rateBeside(value, unit) {
      const shown = fmt.bytesPerS(value);
      if (value == null || !RATE_UNITS[unit] || shown.endsWith(" " + unit)) return shown;
      return shown + " = " + fmt.rateIn(value, unit);
    },
    // A rate in one unit to a tenth, grouped: 184.5 MB/s, 4,000 MB/s (jobs/limits/formulas.py's number()).
    rateIn(value, unit) {
      const inUnit = Math.round((value / RATE_UNITS[unit]) * 10) / 10;
      return inUnit.toLocaleString("en-US", { maximumFractionDigits: 1 }) + " " + unit;
    },
    bytes(value) {
      if (value == null) return "";
      const units = [[2 ** 20, " MiB"], [2 ** 10, " KiB"]];
      for (const [factor, unit] of units) {
        if (value >= factor && value % factor === 0) return value / factor + unit;
      }
      return value + " B";
    },
    // A share as jobs/limits/efficiency.py shows it (static/js/percent.js).
    shownPercent: window.benchPercent.shown,
    percent(ratio) {
      return window.benchPercent.text(ratio * 100);
    },
    // Efficiency in the words of jobs/limits/efficiency.py: of the baseline and, where the disk bursts, of the
    // burst limit; above the highest promise it says so (a cache, a burst or a wrong spec), never a success.
    // With a throughput unit, the limits are rates (bytes/s) and are named in that unit ("of 4,000 MB/s").
    efficiency(measured, baseline, burst, rateUnit) {
      if (measured == null || !baseline) return "";
      const bursts = burst != null && burst > baseline;
      const limit = (value) => (rateUnit ? fmt.rateIn(value, rateUnit) : fmt.exact(value) + " IOPS");
      let text = fmt.percent(measured / baseline) + " of " + (bursts ? "baseline " : "") + limit(baseline);
      if (bursts) text += ", " + fmt.percent(measured / burst) + " of burst " + limit(burst);
      if (fmt.shownPercent((100 * measured) / (bursts ? burst : baseline)) > 100) text += " — " + ABOVE;
      return text;
    },
    // A moment in the page's time zone (not the browser's), 24-hour and labelled: 2026-11-25 21:24 CET.
    when(date) {
      return window.benchClock.show(+date, "minutes");
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

  // A linear axis of seconds from min to max, ticked as a clock (45 s, 2:05) at a step that fits the width.
  function secondsAxis(title, min, max, narrow) {
    return {
      type: "linear",
      min,
      max,
      title: { display: true, text: title },
      ticks: { callback: fmt.clock, maxRotation: 0, stepSize: secondsStep(max - min, narrow ? 5 : 10) },
    };
  }

  // A chart figure's note in place of its chart ("No group … yet"), or the chart again when text is empty.
  function figureNote(id, text) {
    const box = document.getElementById(id);
    if (!box) return;
    box.querySelector(".chart-box").hidden = Boolean(text);
    const note = box.querySelector(".chart-empty");
    note.textContent = text || "";
    note.hidden = !text;
  }

  if (window.Chart) {
    Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
    Chart.defaults.color = "#1d232b";
  }

  // Time axes in the page's time zone, 24-hour: Chart.js asks its date adapter where days and hours begin and
  // how to write a tick; this one answers with Intl in <body data-time-zone> (static/js/clock.js), where the
  // date-fns adapter would use the browser's zone and a 12-hour clock ("8:54:35 p.m.").
  // Ticks leave the zone to the axis title (zoneTitle); tooltips ("datetime") carry it.
  const FORMATS = {
    datetime: "yyyy-MM-dd HH:mm:ss z", millisecond: "HH:mm:ss", second: "HH:mm:ss", minute: "HH:mm",
    hour: "MMM d HH:mm", day: "MMM d", week: "MMM d", month: "MMM yyyy", quarter: "MMM yyyy", year: "yyyy",
  };

  // "run finished, Europe/Berlin time (CET)": a time axis's title names the zone its ticks are in.
  function zoneTitle(what) {
    const clock = window.benchClock;
    const zone = clock.zone();
    return zone === "UTC" ? what + ", UTC" : what + ", " + zone + " time (" + clock.label(Date.now()) + ")";
  }
  const FIXED_MS = { millisecond: 1, second: 1000, minute: 60000, hour: 3600000 };
  const WALL_UNITS = { day: [0, 1], week: [0, 7], month: [1, 0], quarter: [3, 0], year: [12, 0] };

  function zonedAdapter(clock) {
    const wall = (p, months, days) => clock.fromWall(p.year, p.month + months, p.day + days, p.hour, p.minute, p.second);
    return {
      _id: "benchweb-zone",
      formats: () => FORMATS,
      parse(value) {
        if (value === null || value === undefined) return null;
        const ms = typeof value === "number" ? value : value instanceof Date ? value.getTime() : Date.parse(value);
        return isNaN(ms) ? null : ms;
      },
      format: (ms, pattern) => clock.format(ms, pattern),
      add(ms, amount, unit) {
        if (FIXED_MS[unit]) return ms + amount * FIXED_MS[unit];
        const [months, days] = WALL_UNITS[unit] || [0, 0];
        return wall(clock.parts(ms), months * amount, days * amount) + (ms % 1000);
      },
      diff(max, min, unit) {
        if (FIXED_MS[unit]) return Math.trunc((max - min) / FIXED_MS[unit]);
        if (unit === "day" || unit === "week") return Math.trunc((max - min) / (unit === "day" ? 864e5 : 6048e5));
        const a = clock.parts(max);
        const b = clock.parts(min);
        const months = (a.year - b.year) * 12 + a.month - b.month;
        return Math.trunc(unit === "month" ? months : unit === "quarter" ? months / 3 : months / 12);
      },
      startOf(ms, unit, weekday) {
        const p = clock.parts(ms);
        if (unit === "millisecond") return ms;
        if (FIXED_MS[unit]) {
          // Hours begin with the zone's wall clock (India is UTC+05:30).
          const into = unit === "hour" ? p.minute * 60 + p.second : unit === "minute" ? p.second : 0;
          return Math.floor(ms / 1000) * 1000 - into * 1000;
        }
        if (unit === "week" || unit === "isoWeek") {
          const first = unit === "isoWeek" ? +weekday : 0;
          const day = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].indexOf(p.weekday);
          return clock.fromWall(p.year, p.month, p.day - ((day - first + 7) % 7));
        }
        if (unit === "day") return clock.fromWall(p.year, p.month, p.day);
        if (unit === "month") return clock.fromWall(p.year, p.month, 1);
        if (unit === "quarter") return clock.fromWall(p.year, p.month - ((p.month - 1) % 3), 1);
        if (unit === "year") return clock.fromWall(p.year, 1, 1);
        return ms;
      },
      endOf(ms, unit) {
        return this.add(this.startOf(ms, unit), 1, unit) - 1;
      },
    };
  }

  if (window.Chart && window.benchClock) Chart._adapters._date.override(zonedAdapter(window.benchClock));

  window.benchCharts = {
    fmt, logTick, palette, limitLines, getJSON, baseOptions, fitHeight, secondsStep, secondsAxis, zoneTitle, figureNote,
  };
})();
