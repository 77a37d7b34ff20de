// The Ask page and the follow-up boxes: an example question fills the question box when clicked,
// and Ctrl+Enter (Cmd+Enter on a Mac) in a question box submits the question. A file rather than an inline <script>, so the
// Content-Security-Policy can forbid inline script (config/settings.py).
(function () {
  "use strict";
  var box = document.getElementById("id_query");
  document.querySelectorAll("button.example").forEach(function (b) {
    b.addEventListener("click", function () {
      box.value = b.dataset.question;
      box.focus();
    });
  });
  // On the document: the follow-up box under a live run's answer arrives after the page loaded.
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (!target.matches || !target.matches("textarea[name=query]")) { return; }
    var submitShortcut = event.key === "Enter" && (event.ctrlKey || event.metaKey);
    if (!submitShortcut || event.isComposing) { return; }
    event.preventDefault();  // no newline in the box
    // requestSubmit, not submit: it runs the form's validation (required, maxlength) as the
    // Ask button would.
    target.form.requestSubmit();
  });
})();
