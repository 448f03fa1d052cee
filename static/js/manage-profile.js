// Profile form: show the fields of the chosen tool, and the exact job file or command as the user types.
(function () {
  "use strict";
  const form = document.getElementById("profile-form");
  if (!form) return;
  const out = document.getElementById("command-preview");
  const status = document.getElementById("preview-status");
  let timer = null;

  function showTool() {
    const tool = form.elements.tool.value;
    for (const block of form.querySelectorAll("[data-tool]")) block.hidden = block.dataset.tool !== tool;
    // The read share applies to ndisk64 and to fio's mixed patterns only.
    const mixed = tool !== "fio" || ["rw", "randrw"].includes(form.elements.rw.value);
    for (const block of form.querySelectorAll("[data-mixed]")) block.hidden = !mixed;
  }

  // A steady-state criterion picked with its settings empty gets the suggested ones (the help texts say why);
  // "none" clears them, so that no setting is left without a criterion.
  function offerSteadyState() {
    const box = document.getElementById("steady-state");
    if (!box) return;
    const metric = form.elements.ss_metric.value;
    const names = ["ss_limit", "ss_dur_s", "ss_ramp_s"];
    if (!metric) {
      for (const name of names) form.elements[name].value = "";
    } else if (names.every((name) => form.elements[name].value === "")) {
      const suggested = JSON.parse(box.dataset.suggested)[metric.endsWith("_slope") ? "slope" : "band"];
      for (const name of names) form.elements[name].value = suggested[name];
    }
    box.querySelector("[data-ss-settings]").hidden = !metric;
  }

  function fieldLabel(name) {
    const label = form.querySelector('label[for="id_' + name + '"]');
    if (!label && name === "sweep_axes") return "Sweep";
    return label ? label.textContent.replace(/:$/, "") : name;
  }

  async function refresh() {
    const data = new FormData(form);
    data.delete("csrfmiddlewaretoken");
    try {
      const response = await fetch(form.dataset.previewUrl + "?" + new URLSearchParams(data), { headers: { Accept: "application/json" } });
      const result = await response.json();
      if (result.errors) {
        status.className = "error";
        const plan = document.getElementById("sweep-plan");
        if (plan) plan.textContent = "";
        status.textContent = "Not runnable yet: " + Object.entries(result.errors).map(([f, m]) => fieldLabel(f) + ": " + m).join(" ");
        return;
      }
      status.className = "hint";
      status.textContent = "Up to date.";
      out.textContent = result.text;
      // A sweep's points and time (points x (ramp + runtime)), before it is saved or run.
      const plan = document.getElementById("sweep-plan");
      if (plan) plan.textContent = result.plan ? "This sweep: " + result.plan + "." : "";
    } catch (err) {
      status.className = "error";
      status.textContent = "The preview is unavailable right now; saving still works.";
    }
  }

  form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refresh, 300); });
  form.addEventListener("change", (event) => {
    showTool();
    if (event.target.name === "ss_metric") { offerSteadyState(); refresh(); }
  });
  showTool();
  const steady = document.getElementById("steady-state");
  if (steady) {
    // Hidden only while there is nothing to show: no criterion and no setting (a refused one keeps its error).
    const settings = ["ss_limit", "ss_dur_s", "ss_ramp_s"].some((name) => form.elements[name].value !== "");
    steady.querySelector("[data-ss-settings]").hidden = !form.elements.ss_metric.value && !settings;
  }
  refresh();
})();
