// Progressive enhancement of the SKU lookup: "Usar" puts the SKU in the first empty line of the order
// form that opened this tab. Without JavaScript (or without that form) the SKU is copied by hand.
(function () {
  var opener = null;
  try { opener = window.opener && window.opener.document.querySelector("[data-order-form]"); } catch (ignored) {}
  if (!opener) { return; }
  document.querySelectorAll("[data-catalog-sku]").forEach(function (row) {
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = "Usar";
    button.setAttribute("data-use-sku", row.dataset.catalogSku);
    button.addEventListener("click", function () {
      var inputs = opener.querySelectorAll("input[name^='lines-'][name$='-sku']");
      for (var i = 0; i < inputs.length; i += 1) {
        if (!inputs[i].value) {
          inputs[i].value = row.dataset.catalogSku;
          var quantity = opener.querySelector("input[name='" + inputs[i].name.replace(/-sku$/, "-quantity") + "']");
          if (quantity && !quantity.value) { quantity.value = "1"; }
          button.textContent = "Agregado a la línea " + (i + 1);
          return;
        }
      }
      button.textContent = "No hay líneas vacías";
    });
    var cell = document.createElement("td");
    cell.appendChild(button);
    row.appendChild(cell);
  });
})();
