/* mibench report page: numeric sorting for tablesort (vendor/tablesort.min.js) and table set-up.
 * Numeric cells carry their exact value in data-sort ("1.5e-05", "Infinity"; "" when missing). */
(function () {
  "use strict";

  function value(text) {
    var s = (text || "").trim();
    return s === "" ? NaN : parseFloat(s);
  }

  // tablesort sorts with this comparator for descending order and reverses the result for
  // ascending order; a missing value counts as lower than every number.
  Tablesort.extend("number-or-blank", function () { return false; }, function (a, b) {
    var x = value(a), y = value(b), xn = isNaN(x), yn = isNaN(y);
    if (xn || yn) return xn === yn ? 0 : (xn ? 1 : -1);
    if (x === y) return 0;
    return y > x ? 1 : -1;
  });

  function init() {
    var tables = document.querySelectorAll("table.sortable");
    for (var i = 0; i < tables.length; i++) {
      new Tablesort(tables[i]);
      tables[i].setAttribute("data-sortable-ready", "true");
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
