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
