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

  function fieldLabel(name) {
    const label = form.querySelector('label[for="id_' + name + '"]');
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
        status.textContent = "Not runnable yet: " + Object.entries(result.errors).map(([f, m]) => fieldLabel(f) + ": " + m).join(" ");
        return;
      }
      status.className = "hint";
      status.textContent = "Up to date.";
      out.textContent = result.text;
    } catch (err) {
      status.className = "error";
      status.textContent = "The preview is unavailable right now; saving still works.";
    }
  }

  form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refresh, 300); });
  form.addEventListener("change", showTool);
  showTool();
  refresh();
})();
