// A group's history (templates/jobs/sets/group_history.html): each group of the series by when it ended, its total
// while every member ran against its limit (stepped, dashed: a limit holds until the next group's), in IOPS and in
// MB/s where any group has the figure. Data from the page's <script id="group-history-data">.
(function () {
  "use strict";
  const root = document.getElementById("group-history-charts");
  const source = document.getElementById("group-history-data");
  if (!root || !source || !window.Chart || !window.benchCharts) return;
  const { fmt, palette, baseOptions, zoneTitle, figureNote: say } = window.benchCharts;
  const points = JSON.parse(source.textContent);
  const setUrl = (pk) => "/sets/" + pk + "/";

  function line(label, data, colour, dash) {
    return {
      label, data, borderColor: colour, backgroundColor: colour, borderDash: dash || [], borderWidth: 2,
      pointRadius: dash ? 0 : 4, stepped: dash ? "before" : false, tension: 0, spanGaps: Boolean(dash),
    };
  }

  function draw(id, key, limitKey, scale, unit, show) {
    const measured = points.filter((p) => p[key] != null);
    if (!measured.length) {
      const why = key === "iops" ? "No group of this series has a total while every member ran yet." :
        "No group of this series has a total MB/s while every member ran: the members' per-second samples hold IOPS only.";
      return say(id, why);
    }
    say(id, "");
    const total = line("total while every member ran", measured.map((p) => ({ x: p.ms, y: p[key] / scale, set: p.set })), palette[0]);
    const limits = points.filter((p) => p[limitKey]).map((p) => ({ x: p.ms, y: p[limitKey] / scale, set: p.set }));
    const datasets = [total];
    if (limits.length) datasets.push(line("the group's limit", limits, "#b42318", [8, 4]));
    const options = baseOptions();
    options.parsing = true;
    options.scales = {
      x: {
        type: "time",
        time: { tooltipFormat: "yyyy-MM-dd HH:mm z", displayFormats: { minute: "MMM d HH:mm", hour: "MMM d HH:mm", day: "MMM d" } },
        title: { display: true, text: zoneTitle("group ended") },
        ticks: { maxRotation: 0, autoSkipPadding: 16, maxTicksLimit: window.innerWidth < 600 ? 3 : 9 },
      },
      y: { beginAtZero: true, title: { display: true, text: unit }, ticks: { callback: (v) => show(v) } },
    };
    options.plugins.tooltip.callbacks = {
      label: (item) => item.dataset.label + ": " + show(item.parsed.y) + " " + unit + " (group " + item.raw.set + ")",
    };
    options.onClick = (event, elements, chart) => {
      const hit = elements.find((e) => e.datasetIndex === 0);
      if (hit) window.location.href = setUrl(chart.data.datasets[0].data[hit.index].set);
    };
    new Chart(document.getElementById(id + "-chart"), { type: "line", data: { datasets }, options });
  }

  draw("group-history-iops", "iops", "limit_iops", 1, "IOPS", (v) => fmt.iopsTick(v));
  draw("group-history-mbs", "bytes_per_s", "limit_bytes_per_s", 1e6, "MB/s", (v) => Number(v.toFixed(1)).toLocaleString("en-US"));
})();
