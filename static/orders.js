// Progressive enhancement of the order form; no guarantee depends on this file, it only narrows a gap.
(function () {
  var form = document.querySelector("[data-order-form]");
  if (!form) { return; }

  // ADR-005: one requestId per intent, also across the Back button. A browser without a back-forward
  // cache reloads /orders/new on Back: the server hands out a NEW requestId while the browser restores
  // what the salesperson typed, so confirming again would make a second order. The history entry
  // remembers the requestId it submitted and a reloaded fresh form takes it back.
  var KEY = "nexoOrderRequestId";
  var requestId = form.querySelector("[data-request-id]");
  var saved = window.history.state && window.history.state[KEY];
  if (requestId && saved && form.hasAttribute("data-fresh-form")) { requestId.value = saved; }
  form.addEventListener("submit", function () {
    if (!requestId) { return; }
    var state = Object.assign({}, window.history.state || {});
    state[KEY] = requestId.value;
    try { window.history.replaceState(state, ""); } catch (ignored) { /* history unavailable: nothing to keep */ }
  });

  // "Agregar línea": without JavaScript the "Formulario con más líneas" link does the same.
  var button = form.querySelector("[data-add-line]");
  var body = form.querySelector("[data-line-rows]");
  if (!button || !body) { return; }
  var maxRows = parseInt(button.dataset.maxRows || "50", 10);
  button.hidden = false;
  button.addEventListener("click", function () {
    var rows = body.querySelectorAll("[data-line-row]");
    if (rows.length >= maxRows) { button.disabled = true; return; }
    var index = rows.length;
    var row = rows[rows.length - 1].cloneNode(true);
    row.querySelectorAll("[data-line-error], [data-reason]").forEach(function (el) { el.remove(); });
    row.querySelector("td").textContent = String(index + 1);
    row.querySelectorAll("input").forEach(function (input) {
      input.value = "";
      input.name = input.name.replace(/^lines-\d+-/, "lines-" + index + "-");
      var label = input.getAttribute("aria-label") || "";
      input.setAttribute("aria-label", label.replace(/\d+$/, String(index + 1)));
    });
    body.appendChild(row);
    row.querySelector("input").focus();
    if (index + 1 >= maxRows) { button.disabled = true; }
  });
})();
