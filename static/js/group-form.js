// The Run as a group form: how many disks are ticked, said beside the list as they are ticked; and the button says
// what it starts, a group or a group-size sweep.
(function () {
  "use strict";

  function count() {
    const ticked = document.querySelectorAll('#row-disks input[type="checkbox"]:checked').length;
    document.getElementById("disks-chosen").textContent = ticked + " chosen";
  }

  function name(sweep, button) {
    button.textContent = sweep.checked ? "Start the group-size sweep" : "Start the group";
  }

  document.addEventListener("DOMContentLoaded", function () {
    const list = document.getElementById("row-disks");
    if (list) {
      list.addEventListener("change", count);
      count();
    }
    const sweep = document.getElementById("id_as_sizes");
    const button = document.getElementById("group-start");
    if (sweep && button) {
      sweep.addEventListener("change", function () {
        name(sweep, button);
      });
      name(sweep, button);
    }
  });
})();
