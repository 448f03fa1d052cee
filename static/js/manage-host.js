// Host form: show only the login fields that apply (a stored credential, or a new key or password).
// Without JavaScript every field shows and the server ignores the ones that do not apply.
(function () {
  "use strict";
  const form = document.getElementById("host-form");
  if (!form) return;

  function checked(name) {
    const input = form.querySelector('input[name="' + name + '"]:checked');
    return input ? input.value : null;
  }

  function update() {
    const mode = checked("credential_mode");
    const kind = form.elements.new_credential_kind ? form.elements.new_credential_kind.value : null;
    for (const block of form.querySelectorAll("[data-credential-mode]")) {
      block.hidden = mode !== null && block.dataset.credentialMode !== mode;
    }
    for (const block of form.querySelectorAll("[data-credential-kind]")) {
      block.hidden = kind !== null && block.dataset.credentialKind !== kind;
    }
  }

  form.addEventListener("change", update);
  update();
})();

// Host form: say, as the site is typed, which running workers would run the host's work (the page's answer
// from the workers, jobs/runs/sites.py; the same words as the server's).
(function () {
  "use strict";
  const data = document.getElementById("site-workers-data");
  const field = document.getElementById("id_site");
  const line = document.getElementById("site-workers");
  if (!data || !field || !line) return;
  const workers = JSON.parse(data.textContent);

  function say() {
    const site = field.value.trim();
    const queue = site ? "site." + site : workers.default_queue;
    let served = [];
    let text;
    if (!workers.known) {
      text = "Could not ask the workers which of them serve " + queue + " (the broker: " + workers.error + ").";
    } else {
      for (const [name, queues] of Object.entries(workers.queues)) {
        if (queues.includes(queue) || (site && workers.every_site.includes(name))) served.push(name);
      }
      served.sort();
      if (!served.length) {
        text = site
          ? "No running worker serves site " + site + ": this host's runs would wait in queue " + queue +
            ". Start one near the host with `celery -A benchweb worker -Q " + queue + "`, or leave the site empty."
          : "No running worker consumes the default queue " + queue + ": runs wait until one starts.";
      } else if (site && served.every((name) => workers.every_site.includes(name))) {
        text = "Runs go to queue " + queue + "; " + served.join(", ") + " serves every site and takes it within seconds.";
      } else {
        text = "Runs go to queue " + queue + ", served by " + served.join(", ") + ".";
      }
    }
    line.textContent = text;
    line.className = workers.known && served.length ? "hint" : "warn";
  }

  field.addEventListener("input", say);
})();
