// catalogd console: confirm an action before it is posted; filter a list as you type.
// The pages work without this file (no confirmation then, and no filtering as you type).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form.confirm").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.getAttribute("data-confirm") || "Are you sure?")) {
        event.preventDefault();
      }
    });
  });
  document.querySelectorAll("input.filter").forEach(function (input) {
    var selector = input.getAttribute("data-filter");
    input.addEventListener("input", function () {
      var needle = input.value.trim().toLowerCase();
      document.querySelectorAll(selector).forEach(function (item) {
        item.hidden = needle !== "" && item.textContent.toLowerCase().indexOf(needle) < 0;
      });
    });
  });
  document.querySelectorAll(".copyable, pre.copy").forEach(function (element) {
    element.title = "click to copy";
    element.addEventListener("click", function () {
      if (navigator.clipboard) { navigator.clipboard.writeText(element.textContent.trim()); }
    });
  });
});
