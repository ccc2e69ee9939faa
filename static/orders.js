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

  // Live hints (ADR-021): each typed SKU's name, price, availability at the chosen deposit and line amount,
  // and the running total. Read from /orders/skus/line; the server decides again on confirming.
  var lines = form.querySelector("[data-line-rows]");
  var deposit = form.querySelector("select[name=deposit_id]");
  var totalBox = form.querySelector("[data-running-total]");
  var known = {};
  function money(cents) {
    var pesos = Math.floor(Math.abs(cents) / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ".");
    var rest = String(Math.abs(cents) % 100).padStart(2, "0");
    return (cents < 0 ? "-" : "") + "$\u00a0" + pesos + "," + rest;
  }
  function hintOf(row) {
    var sku = row.querySelector("input[name$='-sku']").value.trim().toUpperCase();
    var quantityText = row.querySelector("input[name$='-quantity']").value.trim();
    var quantity = /^[0-9]+$/.test(quantityText) ? parseInt(quantityText, 10) : null;
    var info = row.querySelector("[data-line-info]");
    var hint = info && info.querySelector("[data-line-hint]");
    if (!info || !sku || !(sku in known)) { if (hint && !sku) { hint.remove(); } return null; }
    if (!hint) { hint = document.createElement("p"); hint.className = "line-hint muted"; info.prepend(hint); }
    hint.setAttribute("data-line-hint", sku);
    var item = known[sku];
    if (!item.found) { hint.textContent = "Este artículo no existe en el catálogo."; return null; }
    var available = deposit && deposit.value ? (item.available[deposit.value] || 0) : null;
    var amount = item.price_cents !== null && quantity ? quantity * item.price_cents : null;
    hint.textContent = item.name + " · " + (item.price_cents === null ? "sin precio" : money(item.price_cents) + " c/u") +
      (available === null ? "" : " · disponible: " + available) + (amount === null ? "" : " · " + money(amount)) +
      (available !== null && quantity && quantity > available ? " · no alcanza el stock" : "");
    return amount;
  }
  function refresh() {
    var total = 0, any = false;
    lines.querySelectorAll("[data-line-row]").forEach(function (row) {
      var amount = hintOf(row);
      if (amount !== null) { total += amount; any = true; }
    });
    if (!totalBox) { return; }
    totalBox.hidden = !any;
    totalBox.setAttribute("data-running-total", any ? String(total) : "");
    totalBox.querySelector("[data-running-total-amount]").textContent = any ? money(total) : "";
    var note = totalBox.querySelector("[data-credit-note]");
    var credit = totalBox.getAttribute("data-available-credit-cents");
    if (!note) { return; }
    if (!any || credit === "" || credit === null) { note.textContent = ""; return; }
    credit = parseInt(credit, 10);
    note.textContent = " · crédito disponible del cliente: " + money(credit) +
      (total > credit ? ". Supera el crédito disponible: el pedido va a quedar esperando autorización de Crédito." : "");
  }
  // The chosen client's available credit, for the note beside the total.
  var clientSelect = form.querySelector("select[name=client_id]");
  function lookUpCredit() {
    if (!totalBox || !clientSelect || !clientSelect.value) { if (totalBox) { totalBox.setAttribute("data-available-credit-cents", ""); } refresh(); return; }
    fetch("/orders/clients/" + encodeURIComponent(clientSelect.value) + "/credit", { headers: { Accept: "application/json" } })
      .then(function (answer) { return answer.ok ? answer.json() : null; })
      .then(function (found) {
        totalBox.setAttribute("data-available-credit-cents", found ? String(found.available_cents) : "");
        refresh();
      })
      .catch(function () { /* no note: the form works without it */ });
  }
  if (clientSelect) {
    clientSelect.addEventListener("change", lookUpCredit);
    if (clientSelect.value && totalBox && !totalBox.getAttribute("data-available-credit-cents")) { lookUpCredit(); }
  }
  function lookUp(sku) {
    if (!sku || sku in known) { refresh(); return; }
    fetch("/orders/skus/line?sku=" + encodeURIComponent(sku), { headers: { Accept: "application/json" } })
      .then(function (answer) { return answer.ok ? answer.json() : null; })
      .then(function (item) { if (item) { known[sku] = item; } refresh(); })
      .catch(function () { /* no hint: the form works without it */ });
  }
  if (lines) {
    lines.addEventListener("change", function (event) {
      if (event.target.name && /-sku$/.test(event.target.name)) { lookUp(event.target.value.trim().toUpperCase()); }
      else { refresh(); }
    });
    lines.addEventListener("input", function (event) { if (/-quantity$/.test(event.target.name || "")) { refresh(); } });
    if (deposit) { deposit.addEventListener("change", refresh); }
    lines.querySelectorAll("input[name$='-sku']").forEach(function (input) { lookUp(input.value.trim().toUpperCase()); });
  }

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
    row.querySelectorAll("[data-line-error], [data-reason], [data-line-hint]").forEach(function (el) { el.remove(); });
    row.classList.remove("invalid-row");
    row.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); el.removeAttribute("aria-describedby"); });
    var info = row.querySelector("[data-line-info]");
    if (info) { info.id = "line-" + index + "-problem"; }
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
