// Live progress on a run page: asks the progress endpoint every 2 s until the run is final, then fills the bar
// and puts the stored result in place without reloading the page.
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
      // Whole seconds down for the time gone and up for the time left, so that the two add up to the plan.
      const parts = [Math.floor(p.elapsed_s || 0) + " s of " + p.expected_s + " s", "ETA " + Math.ceil(p.eta_s || 0) + " s"];
      // The figures are of fio's latest interval, which ended iops_at_s into its runtime.
      const figures = [];
      if (p.read_iops != null) figures.push("read " + fmt(p.read_iops) + " IOPS");
      if (p.write_iops != null) figures.push("write " + fmt(p.write_iops) + " IOPS");
      const at = p.iops_at_s != null ? " (fio at " + Math.round(p.iops_at_s) + " s)" : "";
      if (figures.length) parts.push(figures.join(", ") + at);
      // A profile with a fill writes the whole target before the measured job starts (jobs/tools/fio_fill.py).
      if (p.phase === "precondition") parts.push("preconditioning: " + Math.round((p.precondition_bytes || 0) / 1048576) + " MiB written so far");
      text.textContent = parts.join(" · ");
    }
    if (data.final) {
      bar.value = 100;
      text.textContent = "finished; loading the result…";
      return showResult(data.state_label);
    }
    setTimeout(tick, 2000);
  }

  // The server renders the finished page; its content replaces this one's, and the scripts it needs that this
  // page has not loaded yet (the charts) are added in order. Anything unexpected falls back to a reload.
  async function showResult(stateLabel) {
    let fresh;
    try {
      const response = await fetch(window.location.href, { headers: { Accept: "text/html" } });
      if (!response.ok) throw new Error(response.status);
      fresh = new DOMParser().parseFromString(await response.text(), "text/html").querySelector("main");
    } catch (err) {
      fresh = null;
    }
    if (!fresh) return window.location.reload();
    const loaded = new Set([...document.scripts].map((s) => s.src));
    const wanted = [...fresh.querySelectorAll("script[src]")].map((s) => s.src).filter((src) => !loaded.has(src));
    fresh.querySelectorAll("script").forEach((s) => s.remove());
    const main = document.querySelector("main");
    main.replaceChildren(...[...fresh.childNodes].map((node) => document.importNode(node, true)));
    // The bar stays, full, so whoever watched it sees that it reached the end.
    const block = document.getElementById("progress-block");
    if (block) {
      block.hidden = false;
      document.getElementById("run-progress").value = 100;
      document.getElementById("run-progress-text").textContent = stateLabel.toLowerCase();
    }
    for (const src of wanted) {
      const script = document.createElement("script");
      script.src = src;
      script.async = false; // run in document order, like the deferred scripts of a fresh page
      document.body.append(script);
    }
  }

  tick();
})();
