// Live progress on a run page: asks the progress endpoint every 2 s until the run is final, then reloads
// once so the stored result shows.
(function () {
  "use strict";
  const box = document.getElementById("status");
  if (!box || box.dataset.final === "1") return;
  const bar = document.getElementById("run-progress");
  const text = document.getElementById("run-progress-text");
  const fmt = (n) => (n >= 1000 ? (n / 1000).toPrecision(3) + "k" : Math.round(n).toString());

  async function tick() {
    let data;
    try {
      const response = await fetch(box.dataset.progressUrl, { headers: { Accept: "application/json" } });
      data = await response.json();
    } catch (err) {
      text.textContent = "connection lost, retrying…";
      return setTimeout(tick, 4000);
    }
    document.getElementById("run-state").textContent = data.state_label;
    document.getElementById("run-state").className = "state state-" + data.state;
    document.getElementById("run-explanation").textContent = data.explanation;
    const p = data.progress || {};
    if (p.expected_s) {
      bar.value = Math.min(100, (100 * (p.elapsed_s || 0)) / p.expected_s);
      const parts = [Math.round(p.elapsed_s || 0) + " s of " + p.expected_s + " s", "ETA " + Math.round(p.eta_s || 0) + " s"];
      if (p.read_iops != null) parts.push("read " + fmt(p.read_iops) + " IOPS");
      if (p.write_iops != null) parts.push("write " + fmt(p.write_iops) + " IOPS");
      text.textContent = parts.join(" · ");
    }
    if (data.final) {
      bar.value = 100;
      return window.location.reload();
    }
    setTimeout(tick, 2000);
  }
  tick();
})();
