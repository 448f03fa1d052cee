// Live preview on the schedule form: posts the form to the preview endpoint (debounced) and lists the next
// 10 fires with each target's start, or the field errors. Times are in the reader's zone, labelled, and in the
// schedule's own zone too when it reads differently.
(function () {
  "use strict";
  const form = document.getElementById("schedule-form");
  if (!form) return;
  const out = document.getElementById("preview");
  const status = document.getElementById("preview-status");
  let timer = null;

  function offset(seconds) {
    return seconds >= 60 ? "+" + Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s" : "+" + Math.round(seconds) + " s";
  }

  // Overlaps with other schedules on a host: a warning above the form, never a refusal.
  function showWarnings(warnings) {
    const box = document.getElementById("overlap-warnings");
    if (!box) return;
    const list = box.querySelector("ul");
    list.replaceChildren(...warnings.map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }));
    box.hidden = warnings.length === 0;
  }

  async function refresh() {
    const response = await fetch(form.dataset.previewUrl, { method: "POST", body: new FormData(form) });
    const data = await response.json();
    out.replaceChildren();
    if (data.errors) {
      status.textContent = "Not valid yet: " + Object.entries(data.errors).map(([k, v]) => k + ": " + v.join(" ")).join(" · ");
      return;
    }
    status.textContent = data.fires.length ? "" : "No fires: the window is over or every fire falls in a blackout.";
    showWarnings(data.warnings || []);
    for (const fire of data.fires) {
      const block = document.createElement("div");
      block.className = "fire";
      const head = document.createElement("strong");
      head.className = "fire-at";
      head.textContent = fire.at_text;
      block.append(head);
      if (fire.at_schedule_text) {
        const there = document.createElement("span");
        there.className = "hint fire-at-schedule";
        there.textContent = " (" + fire.at_schedule_text + " in the schedule's zone)";
        block.append(there);
      }
      const list = document.createElement("ul");
      for (const run of fire.runs) {
        const item = document.createElement("li");
        item.textContent = run.disk + " — " + run.profile + " at " + run.start_text + " (" + offset(run.offset_s) + ")";
        list.append(item);
      }
      block.append(list);
      out.append(block);
    }
  }

  form.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 400);
  });
  // A blank new form would only list "required" errors; its preview starts with the first thing typed.
  if (form.elements.name && form.elements.name.value) refresh();
})();
