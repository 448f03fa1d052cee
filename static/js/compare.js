// Compare page: grouped bars, measured (solid) beside theoretical (pale), from the json_script data.
(function () {
  "use strict";
  const canvas = document.getElementById("compare-chart");
  const source = document.getElementById("compare-data");
  if (!canvas || !source || typeof Chart === "undefined") return;
  const data = JSON.parse(source.textContent);
  const palette = ["#1f6feb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#65a30d", "#db2777"];
  const fmt = (n) => (n == null ? "—" : n >= 1e6 ? (n / 1e6).toPrecision(3) + "M" : n >= 1000 ? (n / 1000).toPrecision(3) + "k" : Math.round(n).toString());
  // Tooltips give every digit: a limit is checked against the vendor's table, a result against the tool's.
  const exact = (n) => (n == null ? "—" : n.toLocaleString("en-US", { maximumFractionDigits: 1 }));

  const datasets = data.datasets.map((set) => {
    const colour = palette[set.series % palette.length];
    const theoretical = set.kind === "theoretical";
    return {
      label: set.label,
      data: set.data,
      backgroundColor: theoretical ? colour + "33" : colour,
      borderColor: colour,
      borderWidth: theoretical ? 1.5 : 0,
      borderDash: theoretical ? [4, 3] : [],
      kind: set.kind,
      series: set.series,
      burst: set.burst || [],
    };
  });

  // The same words as jobs/limits/efficiency.py: against the baseline and, where the disk bursts, the burst.
  // Cut, not rounded, as jobs/limits/efficiency.py shows a share (static/js/percent.js).
  const { shown: shownPercent, text: percent } = window.benchPercent;
  function efficiency(ctx) {
    const partner = datasets.find((d) => d.series === ctx.dataset.series && d.kind !== ctx.dataset.kind);
    if (!partner) return "";
    const measured = ctx.dataset.kind === "measured" ? ctx.raw : partner.data[ctx.dataIndex];
    const theoretical = ctx.dataset.kind === "measured" ? partner : ctx.dataset;
    const limit = theoretical.data[ctx.dataIndex];
    if (measured == null || !limit) return "";
    const burst = theoretical.burst[ctx.dataIndex];
    const ofBase = (100 * measured) / limit;
    const ofBurst = burst && burst > limit ? (100 * measured) / burst : null;
    let text = " — " + percent(ofBase) + (ofBurst == null ? "" : " of baseline, " + percent(ofBurst) + " of burst");
    if (shownPercent(ofBurst == null ? ofBase : ofBurst) > 100) text += " — above the promise: cache, burst or a wrong spec?";
    return text;
  }

  // Words of a long label on lines of at most `width` characters (a label may already be a list of lines).
  function wrap(label, width) {
    if (Array.isArray(label)) return label.flatMap((line) => wrap(line, width));
    const lines = [];
    for (const word of String(label).split(/(?<=[\s:/_-])/)) {
      const last = lines.length - 1;
      if (last >= 0 && (lines[last] + word).length <= width) lines[last] += word;
      else lines.push(word);
    }
    return lines.map((line) => line.trim());
  }

  // On a phone the bars lie down: the names read across the screen instead of squeezing the plot.
  const box = canvas.parentElement;
  const narrow = box.clientWidth < 600;
  const value = { beginAtZero: true, title: { display: true, text: "IOPS" }, ticks: { callback: (v) => fmt(v) } };
  const category = narrow ? { ticks: { autoSkip: false } } : { ticks: { autoSkip: false, maxRotation: 30 } };
  if (narrow) {
    const bars = data.labels.length * Math.max(1, datasets.length);
    box.style.height = Math.max(260, 90 + bars * 16 + data.labels.length * 24 + datasets.length * 22) + "px";
  }
  new Chart(canvas, {
    type: "bar",
    data: { labels: narrow ? data.labels.map((label) => wrap(label, 16)) : data.labels, datasets: datasets },
    options: {
      indexAxis: narrow ? "y" : "x",
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      scales: narrow ? { x: value, y: category } : { y: value, x: category },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 14 } },
        tooltip: { callbacks: { label: (ctx) => ctx.dataset.label + ": " + exact(ctx.raw) + " IOPS" + efficiency(ctx) } },
      },
    },
  });
})();
