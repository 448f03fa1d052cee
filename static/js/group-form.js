// The Run as a group form: how many disks are ticked, said beside the list as they are ticked.
(function () {
  "use strict";

  function count() {
    const ticked = document.querySelectorAll('#row-disks input[type="checkbox"]:checked').length;
    document.getElementById("disks-chosen").textContent = ticked + " chosen";
  }

  document.addEventListener("DOMContentLoaded", function () {
    const list = document.getElementById("row-disks");
    if (list) {
      list.addEventListener("change", count);
      count();
    }
  });
})();
