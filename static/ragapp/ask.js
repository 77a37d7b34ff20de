// The Ask page: an example question fills the question box when clicked. A file rather than an
// inline <script>, so the Content-Security-Policy can forbid inline script (config/settings.py).
(function () {
  "use strict";
  document.querySelectorAll("button.example").forEach(function (b) {
    b.addEventListener("click", function () {
      var box = document.getElementById("id_query");
      box.value = b.dataset.question;
      box.focus();
    });
  });
})();
