// The Ask page: an example question fills the question box when clicked, and Ctrl+Enter (Cmd+Enter
// on a Mac) in the box submits the question. A file rather than an inline <script>, so the
// Content-Security-Policy can forbid inline script (config/settings.py).
(function () {
  "use strict";
  var box = document.getElementById("id_query");
  if (!box) { return; }
  document.querySelectorAll("button.example").forEach(function (b) {
    b.addEventListener("click", function () {
      box.value = b.dataset.question;
      box.focus();
    });
  });
  box.addEventListener("keydown", function (event) {
    var submitShortcut = event.key === "Enter" && (event.ctrlKey || event.metaKey);
    if (!submitShortcut || event.isComposing) { return; }
    event.preventDefault();  // no newline in the box
    // requestSubmit, not submit: it runs the form's validation (required, maxlength) as the
    // Ask button would.
    box.form.requestSubmit();
  });
})();
