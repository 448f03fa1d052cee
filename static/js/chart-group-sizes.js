// A group-size sweep's page: the group's total IOPS (left axis) and each member's IOPS (right axis: the mean, and
// a band from the lowest to the highest) against the number of members, the size from which adding members stops
// adding IOPS marked. Data from the page itself (the json_script "sizes-data").
(function () {
  "use strict";
  const canvas = document.getElementById("sizes-chart");
  const source = document.getElementById("sizes-data");
  if (!canvas || !source || !window.Chart || !window.benchCharts) return;
  const { fmt, palette, baseOptions, fitHeight } = window.benchCharts;
  const data = JSON.parse(source.textContent);
  const status = document.getElementById("sizes-chart-status");
  const figure = document.getElementById("sizes-curve");

  function say(text) {
    figure.querySelector(".chart-box").hidden = Boolean(text);
    const note = figure.querySelector(".chart-empty");
    note.textContent = text || "";
    note.hidden = !text;
  }

  function datasets(sizes) {
    const value = (key) => sizes.map((s) => (s[key] == null ? null : s[key]));
    const found = [
      {
        type: "line",
        label: "total IOPS (left axis)",
        data: value("total_iops"),
        yAxisID: "y",
        borderColor: palette[0],
        backgroundColor: palette[0],
        borderWidth: 2.5,
        pointRadius: 4,
        tension: 0,
        order: 1,
      },
      {
        type: "line",
        label: "a member, mean (right axis)",
        data: value("mean_iops"),
        yAxisID: "y1",
        borderColor: palette[1],
        backgroundColor: palette[1],
        borderDash: [6, 3],
        borderWidth: 2,
        pointRadius: 3,
        tension: 0,
        order: 2,
      },
      {
        type: "line",
        label: "a member, lowest",
        data: value("min_iops"),
        yAxisID: "y1",
        borderColor: palette[1],
        backgroundColor: palette[1],
        borderWidth: 1,
        pointStyle: "line",
        pointRadius: 8,
        tension: 0,
        order: 3,
      },
      {
        type: "line",
        label: "a member, highest",
        data: value("max_iops"),
        yAxisID: "y1",
        borderColor: palette[1],
        backgroundColor: "rgba(213, 94, 0, 0.15)",
        borderWidth: 1,
        pointStyle: "line",
        pointRadius: 8,
        tension: 0,
        // The band from the lowest member to the highest.
        fill: "-1",
        order: 3,
      },
    ];
    const at = sizes.findIndex((s) => s.members === data.saturation);
    if (at >= 0 && sizes[at].total_iops != null) {
      found.push({
        type: "line",
        label: "saturated from " + data.saturation + (data.saturation === 1 ? " member" : " members"),
        data: sizes.map((s, n) => (n === at ? s.total_iops : null)),
        yAxisID: "y",
        borderColor: palette[0],
        backgroundColor: "#fff",
        pointStyle: "rectRot",
        pointRadius: 10,
        pointBorderWidth: 2.5,
        showLine: false,
        order: 0,
      });
    }
    return found;
  }

  function draw() {
    const sizes = data.sizes;
    if (!sizes.some((s) => s.total_iops != null)) {
      say("No size has its numbers yet: the curve appears as the sizes end.");
      return;
    }
    say("");
    const sets = datasets(sizes);
    const narrow = canvas.parentElement.clientWidth < 600;
    const options = baseOptions();
    options.parsing = true;
    options.normalized = false;
    options.interaction = { mode: "index", intersect: false };
    options.scales = {
      x: { type: "category", offset: true, title: { display: true, text: "members (disks started together)" } },
      y: { position: "left", beginAtZero: true, title: { display: true, text: narrow ? "total IOPS" : "the group's total IOPS" }, ticks: { callback: fmt.iopsTick } },
      y1: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: narrow ? "a member's IOPS" : "each member's IOPS" }, ticks: { callback: fmt.iopsTick } },
    };
    // The legend in the datasets' order (the marker is drawn on top, which would list it first).
    options.plugins.legend.labels.sort = (a, b) => a.datasetIndex - b.datasetIndex;
    options.plugins.tooltip.callbacks = {
      title: (items) => (items.length ? items[0].label + (items[0].label === "1" ? " member" : " members") : ""),
      label: (ctx) => ctx.dataset.label + ": " + fmt.iops(ctx.parsed.y),
    };
    fitHeight(canvas, 340, sets.length);
    new Chart(canvas, { type: "line", data: { labels: sizes.map((s) => String(s.members)), datasets: sets }, options });
  }

  status.textContent = data.final ? "" : "The sweep is still running: reload the page for the latest sizes.";
  draw();
})();
