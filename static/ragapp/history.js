// History: the search and filters fold to one line on a phone, unless a filter is set (then the
// reader wants to see which). At desktop width they stay open, on one row. Without this script
// they are simply open.
(function () {
  "use strict";
  var fold = document.getElementById("filters-fold");
  if (!fold || !window.matchMedia) { return; }
  var narrow = window.matchMedia("(max-width: 40rem)");
  var active = Boolean(fold.querySelector("form").dataset.active);
  function follow() { fold.open = !narrow.matches || active; }
  follow();
  narrow.addEventListener("change", follow);
})();
