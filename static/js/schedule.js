// Live preview on the schedule form: posts the form to the preview endpoint (debounced) and lists the next
// 10 fires with each target's start, or the field errors.
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

  async function refresh() {
    const response = await fetch(form.dataset.previewUrl, { method: "POST", body: new FormData(form) });
    const data = await response.json();
    out.replaceChildren();
    if (data.errors) {
      status.textContent = "Not valid yet: " + Object.entries(data.errors).map(([k, v]) => k + ": " + v.join(" ")).join(" · ");
      return;
    }
    status.textContent = data.fires.length ? "" : "No fires: the window is over or every fire falls in a blackout.";
    for (const fire of data.fires) {
      const block = document.createElement("div");
      block.className = "fire";
      const head = document.createElement("strong");
      head.textContent = fire.at.replace("T", " ").slice(0, 19);
      block.append(head);
      const list = document.createElement("ul");
      for (const run of fire.runs) {
        const item = document.createElement("li");
        item.textContent = run.disk + " — " + run.profile + " at " + run.start.slice(11, 19) + " (" + offset(run.offset_s) + ")";
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
