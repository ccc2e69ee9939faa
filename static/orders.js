// "Agregar línea" for the order form. Progressive enhancement only: without JavaScript the
// "Formulario con más líneas" link does the same, and no guarantee depends on this file.
(function () {
  var button = document.querySelector("[data-add-line]");
  var body = document.querySelector("[data-line-rows]");
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
