// The run page: renders the stored trace, then follows the live stream from the last seq shown.
// Replay uses the same renderLine(), so a past run looks exactly like a live one.
// The event kinds are not listed here: the page passes the declared ones (ragapp/trace/kinds.py)
// as {kind: label} in #trace-kinds. describe() has one case per kind, which
// tests/ragapp/trace/test_kinds.py checks against that declaration.
(function () {
  "use strict";
  var config = document.getElementById("run-config");
  if (!config) { return; }
  var list = document.getElementById("trace");
  var kindLabels = JSON.parse(document.getElementById("trace-kinds").textContent);
  var lastSeq = 0;
  var finished = false;

  function hasOwn(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }
  function text(value) { return value === undefined || value === null ? "" : String(value); }
  function where(doc) {
    doc = doc || {};
    return text(doc.source_path) + (doc.heading_path ? " › " + doc.heading_path : "");
  }
  function ms(p) { return p.duration_ms != null ? " (" + Math.round(p.duration_ms) + " ms)" : ""; }

  // One readable line per event; textContent only, so nothing in a payload is ever HTML.
  function describe(e) {
    var p = e.payload || {};
    switch (e.kind) {
      case "retrieve": return "retrieve #" + p.iteration + ": " + p.docs_found + " documents for “" + p.query + "”" + ms(p);
      case "grade": return "grading document " + p.index + " of " + p.total + " … relevance " + Number(p.score).toFixed(2) + ", " + (p.passed ? "kept" : "filtered out") + " — " + where(p.document);
      case "grade_docs": return p.passed + " of " + p.total + " documents passed" + ms(p);
      case "broaden": return "broadened the query: “" + p.old_query + "” → “" + p.new_query + "”";
      case "generate": return p.fallback ? "no relevant documents: honest fallback, no model call" : "generated an answer from " + (p.sources || []).length + " documents" + ms(p);
      case "grade_answer": if (p.declined) { return "the answer says the documents do not cover the question" + ms(p); } return "faithfulness " + Number(p.faithfulness_score).toFixed(2) + ", risk " + p.hallucination_risk + ": " + (p.faithful ? "faithful" : "not faithful") + ms(p);
      case "refine": return "refined the answer" + ms(p);
      case "answer": return "final: " + p.status;
      case "error": return "error: " + p.message;
      case "done": return "done (" + p.status + ")";
      // A declared kind with no case above (test_kinds.py fails on that) still reads as a label.
      default: return hasOwn(kindLabels, e.kind) ? kindLabels[e.kind] : e.kind;
    }
  }

  function renderLine(e) {
    if (e.seq <= lastSeq) { return; }  // exactly once, in order
    lastSeq = e.seq;
    var li = document.createElement("li");
    li.className = "event kind-" + e.kind;
    li.dataset.seq = e.seq;
    li.textContent = describe(e);
    list.appendChild(li);
    if (e.kind === "done") { finish(); }
  }

  function finish() {
    if (finished) { return; }
    finished = true;
    document.getElementById("waiting").hidden = true;
    fetch(config.dataset.answerUrl, { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) { document.getElementById("answer").innerHTML = html; });
    if (window.traceSource) { window.traceSource.close(); }
  }

  var stored = JSON.parse(document.getElementById("trace-data").textContent);

  if (config.dataset.replay) {
    // Replay: the stored events again, spaced as they originally were (divided by the speed).
    var speed = document.getElementById("replay-speed");
    var next = 0;
    var timer = null;
    var step = function () {
      if (next >= stored.length) { return; }
      renderLine(stored[next]);
      next += 1;
      if (next < stored.length) {
        var gap = Date.parse(stored[next].created_at) - Date.parse(stored[next - 1].created_at);
        timer = setTimeout(step, Math.min(Math.max(gap, 0), 10000) / Number(speed.value || 1));
      }
    };
    document.getElementById("replay-all").addEventListener("click", function () {
      clearTimeout(timer);
      while (next < stored.length) { renderLine(stored[next]); next += 1; }
    });
    document.getElementById("waiting").hidden = true;
    step();
    return;
  }

  stored.forEach(renderLine);
  if (finished) { return; }

  var options = {};
  if (lastSeq > 0) { options.lastEventId = config.dataset.channel + ":" + lastSeq; }
  var source = new ReconnectingEventSource(config.dataset.eventsUrl, options);
  window.traceSource = source;
  Object.keys(kindLabels).forEach(function (kind) {
    source.addEventListener(kind, function (m) { renderLine(JSON.parse(m.data)); });
  });
})();
