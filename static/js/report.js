// The printable report's one button: the browser's print dialog, where "Save as PDF" is a destination.
document.addEventListener("DOMContentLoaded", () => {
  const button = document.getElementById("report-print");
  if (button) button.addEventListener("click", () => window.print());
});
