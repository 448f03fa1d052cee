// A group's page: its total IOPS second by second on the worker's clock, the seconds in which every member ran
// filled (the ramps hollow), the window when all ran shaded, and the group's limit as a horizontal line.
// Data from the page itself (json_script "group-chart-data", jobs/sets/facts.py _group_chart).
(function () {
  "use strict";
  const root = document.getElementById("group-charts");
  const source = document.getElementById("group-chart-data");
  if (!root || !source || !window.Chart || !window.benchCharts) return;
  const { fmt, baseOptions, secondsAxis } = window.benchCharts;
  const status = document.getElementById("group-chart-status");
  const colour = "#0072B2";
  const LIMIT = "#b42318";

  function limitLine(data) {
    if (!data.limit_iops) return {};
    return {
      limit: {
        type: "line",
        drawTime: "beforeDatasetsDraw",
        yMin: data.limit_iops,
        yMax: data.limit_iops,
        borderColor: LIMIT,
        borderWidth: 2,
        borderDash: [8, 4],
        label: {
          display: true,
          content: "group limit " + fmt.exact(data.limit_iops) + " IOPS",
          position: "end",
          // Above the line, so that the seconds near the limit stay in sight.
          yAdjust: -12,
          backgroundColor: "rgba(255,255,255,.8)",
          color: "#912018",
          font: { size: 11, weight: "600" },
          padding: 3,
        },
      },
    };
  }

  function allRunning(data) {
    if (!data.all_running) return {};
    return {
      together: {
        type: "box",
        drawTime: "beforeDatasetsDraw",
        xMin: data.all_running.start,
        xMax: data.all_running.end,
        backgroundColor: "rgba(0,158,115,.08)",
        borderWidth: 0,
      },
    };
  }

  function draw(data) {
    const points = data.seconds.map((s) => ({ x: s.x, y: s.iops, every: s.every, members: s.members }));
    const datasets = [{
      label: "total IOPS (filled: every member ran)",
      data: points,
      borderColor: colour,
      backgroundColor: points.map((p) => (p.every ? colour : "#fff")),
      pointBorderColor: colour,
      pointRadius: points.length > 300 ? 0 : points.map((p) => (p.every ? 3 : 3.5)),
      pointBorderWidth: 1.5,
      borderWidth: 2,
      tension: 0,
    }];
    const first = points[0].x;
    const last = points[points.length - 1].x;
    const narrow = root.clientWidth < 600;
    const options = baseOptions();
    options.interaction = { mode: "index", intersect: false, axis: "x" };
    options.scales = {
      x: secondsAxis("time since the first member started (s, then m:ss)", Math.min(0, first), last, narrow),
      y: {
        beginAtZero: true,
        suggestedMax: (data.limit_iops || 0) * 1.08,
        title: { display: true, text: "IOPS (I/O operations per second)" },
        ticks: { callback: fmt.iopsTick },
      },
    };
    options.plugins.annotation = { annotations: { ...allRunning(data), ...limitLine(data) } };
    options.plugins.tooltip.callbacks = {
      title: (items) => (items.length ? "at " + fmt.clock(items[0].parsed.x) : ""),
      label(ctx) {
        const p = ctx.raw;
        const who = p.every ? "every member" : p.members + " of " + data.members + " members";
        const share = data.limit_iops ? " · " + fmt.percent(p.y / data.limit_iops) + " of the group limit" : "";
        return "total: " + fmt.iops(p.y) + " (" + who + ")" + share;
      },
    };
    new Chart(document.getElementById("group-iops-chart"), { type: "line", data: { datasets }, options });
  }

  function describe(data) {
    const every = data.seconds.filter((s) => s.every).length;
    const parts = [every + " of " + data.seconds.length + " seconds with every member running (shaded)."];
    parts.push(data.limit_iops ? "The dashed line is the group limit: " + data.limit_text + "." : "No group limit to draw: " + (data.limit_text || "none given") + ".");
    return parts.join(" ");
  }

  const data = JSON.parse(source.textContent);
  status.textContent = describe(data);
  draw(data);
})();
