// Progressive enhancement only: every guarantee holds without this file (ADR-005 relies on the
// requestId, not on the button). No inline scripts anywhere, so the CSP can forbid them.
document.addEventListener("submit", function (event) {
  var form = event.target;
  if (form.dataset.submitted === "true") { event.preventDefault(); return; }
  form.dataset.submitted = "true";
  form.querySelectorAll("[data-disable-on-submit]").forEach(function (button) {
    button.disabled = true;
    if (button.dataset.busyLabel) {
      button.dataset.idleLabel = button.textContent;
      button.textContent = button.dataset.busyLabel;
    }
  });
});
// The browser's back button restores the page from its cache with the button still disabled and
// still saying "Enviando…": give the salesperson the button back as it was.
window.addEventListener("pageshow", function () {
  document.querySelectorAll("form[data-submitted]").forEach(function (form) {
    delete form.dataset.submitted;
    form.querySelectorAll("[data-disable-on-submit]").forEach(function (button) {
      button.disabled = false;
      if (button.dataset.idleLabel) { button.textContent = button.dataset.idleLabel; }
    });
  });
});
// A "Imprimir" button (picking list, order page): hidden without JavaScript, where the browser's own print works.
document.querySelectorAll("[data-print]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () { window.print(); });
});
