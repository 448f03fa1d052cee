// Overview: keeps the progress of running and waiting runs current without reloading; reloads once when one
// ends. A run waiting for its slot keeps the server's "waiting until <time>" until that time has passed.
(function () {
  "use strict";
  const rows = document.querySelectorAll(".live-run[data-progress-url]");
  if (!rows.length) return;

  async function tick() {
    let finished = false;
    for (const row of rows) {
      try {
        const response = await fetch(row.dataset.progressUrl, { headers: { Accept: "application/json" } });
        const data = await response.json();
        const state = row.querySelector('[data-role="state"]');
        state.textContent = data.state_label;
        state.className = "state state-" + data.state;
        const p = data.progress || {};
        const text = row.querySelector('[data-role="text"]');
        const until = Date.parse(row.dataset.waitingUntil || "");
        if (!data.final && Date.now() < until) {
          // still waiting for its slot: the text says until when
        } else if (p.expected_s) {
          const percent = Math.min(100, (100 * (p.elapsed_s || 0)) / p.expected_s);
          const bar = row.querySelector("progress");
          if (bar) bar.value = percent;
          text.textContent = Math.round(percent) + " %, about " + Math.round(p.eta_s || 0) + " s left";
        } else {
          text.textContent = data.explanation;
        }
        finished = finished || data.final;
      } catch (err) {
        // A missed tick is harmless; the next one catches up.
      }
    }
    if (finished) return window.location.reload();
    setTimeout(tick, 3000);
  }
  setTimeout(tick, 2000);
})();
