// The top bar on a phone: the navigation folds behind a Menu button. Loaded in <head> without defer, so the
// class below is set before the first paint and the menu never flashes open; without JavaScript the menu
// simply stays open.
(function () {
  "use strict";
  document.documentElement.classList.add("js-nav");
  document.addEventListener("DOMContentLoaded", () => {
    const button = document.querySelector(".menu-toggle");
    const bar = document.querySelector(".topbar");
    if (!button || !bar) return;
    const show = (open) => {
      bar.classList.toggle("open", open);
      button.setAttribute("aria-expanded", String(open));
    };
    button.addEventListener("click", () => show(!bar.classList.contains("open")));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && bar.classList.contains("open")) {
        show(false);
        button.focus();
      }
    });
  });
})();
