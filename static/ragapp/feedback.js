// Feedback without a page reload: the feedback form (templates/ragapp/_feedback.html) is posted
// with fetch, and the block the server sends back replaces it, showing the rating given and the
// comment box. Without this script the same form is a plain POST that comes back to the page.
// Listening on the document: the form arrives with the answer block when a live run finishes.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.classList || !form.classList.contains("feedback-form") || !window.fetch) { return; }
    event.preventDefault();
    var submitter = event.submitter;  // the thumb (or "Send comment") carries the rating
    var data = new FormData(form, submitter);
    var status = form.querySelector(".feedback-status");
    var hadComment = Boolean(form.querySelector("textarea"));
    status.textContent = "Sending…";
    fetch(form.action, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch", "X-CSRFToken": data.get("csrfmiddlewaretoken") }
    })
      .then(function (response) {
        return response.text().then(function (html) { return { ok: response.ok, html: html }; });
      })
      .then(function (reply) {
        if (!reply.ok) {
          status.textContent = new DOMParser().parseFromString(reply.html, "text/html").body.textContent.trim() || "Feedback not saved.";
          return;
        }
        var section = form.closest("section");
        var holder = document.createElement("div");
        holder.innerHTML = reply.html;  // rendered by the server, every value escaped
        var fresh = holder.firstElementChild;
        section.replaceWith(fresh);
        // Keyboard users stay where they were; after the first rating, the comment box is next.
        var box = fresh.querySelector("textarea");
        var again = submitter && fresh.querySelector("button[value='" + submitter.value + "']" + (submitter.classList.contains("send-comment") ? ".send-comment" : ".thumb"));
        if (box && !hadComment) { box.focus(); } else if (again) { again.focus(); }
      })
      .catch(function () { status.textContent = "Feedback not saved: the server could not be reached."; });
  });
})();
