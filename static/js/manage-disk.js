// Disk form: the chosen type's size range and inputs, the block-device warning, and the theoretical limits
// computed by the server as the user types.
(function () {
  "use strict";
  const form = document.getElementById("disk-form");
  if (!form) return;
  const types = JSON.parse(document.getElementById("disk-types").textContent);
  const typeHint = document.getElementById("type-hint");
  const preview = document.getElementById("limits-preview");
  const warning = document.getElementById("block-warning");
  const confirmRow = document.getElementById("row-confirm_destructive");
  const names = { iops: "IOPS", bytes_per_s: "throughput", burst_iops: "burst IOPS", burst_bytes_per_s: "burst throughput" };
  let timer = null;

  function describeType() {
    const type = types[form.elements.disk_type.value];
    if (!type) return;
    const parts = [type.size_required ? "Size " + type.range + "." : "No size needed."];
    const inputs = Object.entries(type.inputs || {});
    parts.push(inputs.length
      ? "Takes " + inputs.map(([k, v]) => names[k] + " (" + v + ")").join(", ") + "."
      : "Takes no provisioned values: leave IOPS and throughput empty.");
    typeHint.textContent = parts.join(" ");
  }

  function showUnit() {
    const unit = form.elements.throughput_unit.value;
    for (const name of ["spec_bytes_per_s", "spec_burst_bytes_per_s", "instance_bytes_per_s_cap"]) {
      const label = form.querySelector('label[for="id_' + name + '"]');
      if (!label) continue;
      label.dataset.base = label.dataset.base || label.textContent.replace(/:$/, "");
      label.textContent = label.dataset.base + " (" + unit + "):";
    }
  }

  function describeWrites() {
    const block = form.elements.kind.value === "block";
    const allowed = form.elements.allow_destructive.checked;
    warning.hidden = !block;
    warning.classList.toggle("armed", block && allowed);
    confirmRow.hidden = !(block && allowed);
  }

  async function refresh() {
    const data = new FormData(form);
    data.delete("csrfmiddlewaretoken");
    try {
      const response = await fetch(form.dataset.previewUrl + "?" + new URLSearchParams(data), { headers: { Accept: "application/json" } });
      const result = await response.json();
      preview.classList.toggle("error", Boolean(result.errors));
      preview.classList.remove("hint");
      preview.textContent = result.errors
        ? Object.entries(result.errors).map(([field, message]) => labelled(field, message)).join(" ")
        : result.text;
    } catch (err) {
      preview.textContent = "The preview is unavailable; the limits show on the disk's page after saving.";
    }
  }

  function labelled(name, message) {
    const label = fieldLabel(name);
    return message.toLowerCase().startsWith(label.toLowerCase()) ? message : label + ": " + message;
  }

  function fieldLabel(name) {
    const label = form.querySelector('label[for="id_' + name + '"]');
    return label ? label.textContent.replace(/\s*\(.*\)$/, "").replace(/:$/, "") : name;
  }

  form.addEventListener("input", () => {
    describeType();
    describeWrites();
    clearTimeout(timer);
    timer = setTimeout(refresh, 350);
  });
  form.addEventListener("change", () => { describeType(); describeWrites(); showUnit(); });
  describeType();
  describeWrites();
  showUnit();
  refresh();
})();
