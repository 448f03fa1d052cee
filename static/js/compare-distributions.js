// Compare page: completion-latency CDFs on a log x axis, one line per run (or disk) and direction, and where
// json+ bins exist, histograms on shared bins. Data from /compare/distributions.json (jobs/results/distributions.py).
(function () {
  "use strict";
  const card = document.getElementById("distributions");
  if (!card || typeof Chart === "undefined") return;
  const note = document.getElementById("distributions-note");
  const palette = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];
  // The same rules as jobs/units.py format_micros.
  const sig3 = (v) => Number(v.toPrecision(3)).toString();
  const micros = (v) => (v >= 1e6 ? sig3(v / 1e6) + " s" : v >= 1000 ? sig3(v / 1000) + " ms" : sig3(v) + " µs");

  // 1, 2 or 5 times a power of ten.
  function readable(value) {
    if (!(value > 0)) return false;
    const mantissa = value / 10 ** Math.floor(Math.log10(value) + 1e-9);
    return [1, 2, 5].some((k) => Math.abs(mantissa - k) < 1e-6);
  }

  function drawCdf(series) {
    const datasets = series.map((s, i) => ({
      label: s.label,
      data: s.cdf.map((p) => ({ x: p.latency_us, y: p.percent })),
      borderColor: palette[i % palette.length],
      backgroundColor: palette[i % palette.length],
      borderDash: s.direction === "write" ? [6, 3] : [],
      pointRadius: s.source === "bins" ? 0 : 3,
      stepped: s.source === "bins" ? "before" : false,
      source: s.source,
    }));
    new Chart(document.getElementById("distributions-cdf"), {
      type: "line",
      data: { datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        parsing: true,
        scales: {
          // Labels at 1, 2 and 5 of each decade only, level, and skipped where they would touch: Chart.js's log
          // scale makes a tick at every 1..9, whose labels overlapped on a phone.
          x: {
            type: "logarithmic",
            title: { display: true, text: "completion latency" },
            afterBuildTicks: (scale) => {
              scale.ticks = scale.ticks.filter((tick) => readable(tick.value));
            },
            ticks: { callback: (v) => micros(v), maxRotation: 0, autoSkip: true, autoSkipPadding: 10 },
          },
          y: { min: 0, max: 100, title: { display: true, text: "% of I/Os at or below" }, ticks: { callback: (v) => v + "%" } },
        },
        plugins: {
          legend: { position: "bottom", labels: { boxWidth: 14 } },
          tooltip: { callbacks: { label: (ctx) => ctx.dataset.label + ": " + ctx.parsed.y + " % within " + micros(ctx.parsed.x) } },
        },
      },
    });
  }

  function drawHistogram(edges, series) {
    const withBins = series.map((s, i) => [s, i]).filter(([s]) => s.histogram);
    if (!edges || !withBins.length) return;
    const box = document.getElementById("distributions-histogram-box");
    box.hidden = false;
    const datasets = withBins.map(([s, i]) => ({
      label: s.label + " (" + s.histogram.total.toLocaleString("en-US") + " I/Os)",
      data: s.histogram.percent,
      backgroundColor: palette[i % palette.length] + "99",
      borderWidth: 0,
      barPercentage: 1,
      categoryPercentage: 0.9,
    }));
    new Chart(document.getElementById("distributions-histogram"), {
      type: "bar",
      data: { labels: edges.slice(0, -1).map(micros), datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { title: { display: true, text: "completion latency (log-spaced bins, lower edge)" }, ticks: { maxRotation: 0, autoSkipPadding: 12 } },
          y: { beginAtZero: true, title: { display: true, text: "% of the series' I/Os" }, ticks: { callback: (v) => v + "%" } },
        },
        plugins: { legend: { position: "bottom", labels: { boxWidth: 14 } } },
      },
    });
  }

  fetch(card.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((response) => response.json().then((body) => ({ ok: response.ok, body })))
    .then(({ ok, body }) => {
      if (!ok) {
        note.textContent = body.error || "The distributions could not be loaded.";
        return;
      }
      if (!body.series.length) {
        note.textContent = "None of these runs reported completion-latency percentiles (ndisk64 reports none).";
        return;
      }
      drawCdf(body.series);
      drawHistogram(body.edges_us, body.series);
      const missing = body.disks_without_runs || [];
      note.textContent = "Drawn: " + body.what + "." + (missing.length ? " " + missing.length + " disk(s) have no run of it." : "");
      card.dataset.drawn = String(body.series.length);
    })
    .catch(() => {
      note.textContent = "The distributions could not be loaded; reload the page.";
    });
})();
