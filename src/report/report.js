(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (event) {
    errors.push(String(event.message));
    document.body.setAttribute("data-errors", errors.join("; "));
  });
  function key(row, column) {
    var cell = row.cells[column];
    if (!cell) return "";
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent : Number(v);
  }
  function sort(table, column, th) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (a, b) {
      var x = key(a, column), y = key(b, column);
      var order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return ascending ? order : -order;
    });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
      th.setAttribute("title", "sort");
      th.addEventListener("click", function () { sort(table, column, th); });
    });
  });
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details"), function (d) { d.open = true; });
  });
  document.body.setAttribute("data-ready", "1");
})();
