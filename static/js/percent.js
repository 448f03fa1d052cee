// A share of a limit as jobs/limits/efficiency.py shows it, for every page that draws one (the disk and run
// charts, Compare): whole percents from 10 %, tenths below, cut, not rounded, so "100 %" never stands for 100.4.
(function () {
  "use strict";

  function shown(share) {
    const exact = Math.round(share * 1e6) / 1e6;
    return exact >= 10 ? Math.floor(exact) : Math.floor(exact * 10) / 10;
  }

  // 3,009 % or 7.5 %.
  function text(share) {
    const cut = shown(share);
    return (cut >= 10 ? cut.toLocaleString("en-US") : cut.toFixed(1)) + " %";
  }

  window.benchPercent = { shown, text };
})();
