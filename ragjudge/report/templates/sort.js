/* ragjudge report: sort a table by the column whose header button is pressed. Each cell to sort
   by carries data-sort (a number: the value, or the row's place in the natural order of query
   ids); a cell without one (an undefined value) goes last either way; ties keep the order the
   rows had when the page was written (data-order). */
(function () {
  "use strict";
  function key(cell) {
    var value = cell ? cell.getAttribute("data-sort") : null;
    return value === null || value === "" ? null : Number(value);
  }
  function order(row) {
    return Number(row.getAttribute("data-order"));
  }
  function sortBy(table, column, header) {
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[column]), y = key(b.cells[column]);
      if (x === null || y === null) {
        return x === y ? order(a) - order(b) : (x === null ? 1 : -1);
      }
      if (x !== y) {
        return ascending ? x - y : y - x;
      }
      return order(a) - order(b);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      var button = header.querySelector("button");
      if (button) {
        button.addEventListener("click", function () { sortBy(table, column, header); });
      }
    });
  });
}());
