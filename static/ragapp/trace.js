// The run page: renders the stored trace, then follows the live stream from the last seq shown.
// Replay uses the same renderLine(), so a past run looks exactly like a live one; a thread's
// replay (data-thread) plays each run's trace into its own section, one after another. The page's
// status follows the trace, a finished trace gets a summary line (the <details> it sits in is
// folded by the server when the run had already finished), and the copy buttons are wired here.
// The event kinds are not listed here: the page passes the declared ones (ragapp/trace/kinds.py)
// as {kind: label} in #trace-kinds. describe() has one case per kind, which
// tests/ragapp/trace/test_kinds.py checks against that declaration.
(function () {
  "use strict";
  var config = document.getElementById("run-config");
  if (!config) { return; }
  var list = document.getElementById("trace");
  var kindLabels = JSON.parse(document.getElementById("trace-kinds").textContent);
  var statusLabels = JSON.parse(document.getElementById("run-statuses").textContent);
  var statusBadge = document.getElementById("run-status");
  var replay = Boolean(config.dataset.replay);
  var docsRoot = (config.dataset.docsRoot || "").replace(/\/+$/, "");
  var lastSeq = 0;
  var finished = false;
  var shown = [];  // the events rendered so far, for the summary line
  // Where the run being shown goes: the page's own, or in a thread's replay the current turn's.
  var summaryBox = document.getElementById("trace-summary");
  var answerBox = document.getElementById("answer");
  var answerUrl = config.dataset.answerUrl;

  function hasOwn(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }
  function text(value) { return value === undefined || value === null ? "" : String(value); }
  // As displayPath() in ragapp/views.py: relative to the docs root when under it, else the last
  // two parts, so a line does not show (or overflow with) the server's directories.
  function displayPath(path) {
    path = text(path);
    if (docsRoot && path.indexOf(docsRoot + "/") === 0) { return path.slice(docsRoot.length + 1); }
    return path.replace(/\\/g, "/").split("/").filter(Boolean).slice(-2).join("/");
  }
  function where(doc) {
    doc = doc || {};
    return displayPath(doc.source_path) + (doc.heading_path ? " › " + doc.heading_path : "");
  }
  // Passages of the same pages the answer check added because they hold what the answer names.
  function supporting(p) {
    var added = p.supporting_documents || [];
    return added.length ? "; read with passages from the same pages: " + added.map(where).join(", ") : "";
  }
  function ms(p) { return p.duration_ms != null ? " (" + Math.round(p.duration_ms) + " ms)" : ""; }
  // RAG_HYDE: the passage the model wrote, searched for with the question (never evidence).
  function hypothesis(p) {
    if (p.hypothesis) { return "; searched with a passage the model wrote for it" + (p.hypothesis_ms != null ? " in " + Math.round(p.hypothesis_ms) + " ms" : "") + ": “" + p.hypothesis + "”"; }
    return p.hypothesis_problem ? "; no passage written for the search (" + p.hypothesis_problem + ")" : "";
  }

  // Scores as words, as the answer's sources show them (RELEVANCE_WORDS in ragapp/views.py);
  // the exact score is the line's bar's tooltip, not its headline.
  function relevanceWord(score) { return score >= 0.7 ? "high" : score >= 0.4 ? "medium" : "low"; }
  function claims(p) {
    var list = p.problematic_claims || [];
    return list.length ? " — unsupported: " + list.join("; ") : "";
  }
  var refusalReasons = { no_relevant_documents: "no relevant documents", not_in_documents: "not in the documents", unfaithful: "not faithful" };

  // Why the judge was not asked about a chunk: the question named what no page holds (the
  // grade's reason says which names), or else the retrieval gate had its answer already.
  function notAskedWhy(reasoning) {
    var prefix = "not asked: the question names ";
    if (typeof reasoning === "string" && reasoning.indexOf(prefix) === 0) {
      return reasoning.slice("not asked: ".length);
    }
    return "a document ranked above passed first";
  }

  // One readable line per event; textContent only, so nothing in a payload is ever HTML.
  function describe(e) {
    var p = e.payload || {};
    switch (e.kind) {
      case "reuse": return "answered earlier: the verified answer of run " + p.reused_run + (p.match === "exact" ? " (the same question)" : " (a question " + Number(p.similarity).toFixed(2) + " similar)") + ", knowledge base version " + p.index_version + "; no model was called";
      case "condense": return p.fallback ? "kept the follow-up as asked: " + p.reason + " — “" + p.original_question + "”" : "made the follow-up standalone: “" + p.original_question + "” → “" + p.standalone_question + "”" + ms(p) + (p.reason ? " (" + p.reason + ")" : "");
      case "retrieve": return p.read_on ? "read on: " + p.docs_found + (p.docs_found === 1 ? " more chunk" : " more chunks") + " of the pages found, after the answer was refused" + ms(p) : "retrieve #" + p.iteration + ": " + p.docs_found + " documents for “" + p.query + "”" + (p.excerpted ? ", " + p.excerpted + " shown to the model as excerpts" : "") + (p.unknown_names && p.unknown_names.length ? "; no document mentions " + p.unknown_names.join(", ") : "") + hypothesis(p) + ms(p);
      case "grade": return "grading document " + p.index + " of " + p.total + " … " + (p.score == null ? "not asked (" + notAskedWhy(p.reasoning) + ")" : relevanceWord(Number(p.score)) + " relevance") + ", " + (p.passed ? "kept" : "filtered out") + " — " + where(p.document);
      case "grade_docs": return p.passed + " of " + p.total + " documents passed" + (p.doubtful ? " as doubtful, so the answer is held to a stricter check" : "") + ms(p);
      case "broaden": return "broadened the query: “" + p.old_query + "” → “" + p.new_query + "”";
      case "generate": return p.fallback ? "no relevant documents: honest fallback, no model call" : "generated an answer from " + (p.sources || []).length + " documents" + (p.opening_doubted ? ", stopped at its opening claim, which the check doubted" : "") + ms(p);
      case "grade_answer":
        if (p.declined) { return "the answer says the documents do not cover the question" + ms(p); }
        return (p.after_refinement ? "refined answer checked: " : "answer checked: ") + (p.faithful ? "faithful" : "not faithful") + ", " + p.hallucination_risk + " risk" + ms(p) + supporting(p) + claims(p);
      case "refine": return (p.unrevised ? "refinement left nothing new to check: refused without a second check" : "refined the answer") + ms(p);
      case "answer": return "final: " + p.status + (p.refusal_reason ? " (" + (refusalReasons[p.refusal_reason] || p.refusal_reason) + ")" : "");
      case "error": return "error: " + p.message;
      case "done": return "done (" + p.status + ")";
      // A declared kind with no case above (test_kinds.py fails on that) still reads as a label.
      default: return hasOwn(kindLabels, e.kind) ? kindLabels[e.kind] : e.kind;
    }
  }

  // A score as a small bar after the words, with the exact value as its tooltip.
  function scoreBar(score, label) {
    var meter = document.createElement("meter");
    meter.min = 0; meter.max = 1; meter.low = 0.4; meter.high = 0.7; meter.optimum = 1;
    meter.value = score;
    meter.title = label + " " + score.toFixed(2);
    meter.setAttribute("aria-label", meter.title);
    return meter;
  }

  function renderLine(e) {
    if (e.seq <= lastSeq) { return; }  // exactly once, in order
    lastSeq = e.seq;
    shown.push(e);
    var li = document.createElement("li");
    li.className = "event kind-" + e.kind;
    li.dataset.seq = e.seq;
    li.textContent = describe(e);
    var p = e.payload || {};
    if (e.kind === "grade") {
      li.classList.add(p.passed ? "kept" : "filtered");
      if (p.score != null) li.appendChild(scoreBar(Number(p.score), "relevance"));
    } else if (e.kind === "grade_answer" && !p.declined && p.faithfulness_score != null) {
      li.classList.add(p.faithful ? "kept" : "filtered");
      li.appendChild(scoreBar(Number(p.faithfulness_score), "faithfulness"));
    }
    var doc = p.document;
    if (doc && doc.source_path) { li.title = doc.source_path; }  // the full path, on hover
    list.appendChild(li);
    if (!replay) { followStatus(e); }
    if (e.kind === "done") { finish(); }
  }

  // The status shown was true when the page was rendered: a queued run is running once its first
  // event arrives, and `done` carries the final status. Replay shows the final status throughout.
  function followStatus(e) {
    if (e.kind === "done") { setStatus((e.payload || {}).status); }
    else if (statusBadge.dataset.status === "queued") { setStatus("running"); }
  }
  function setStatus(status) {
    if (!status) { return; }
    statusBadge.dataset.status = status;
    statusBadge.className = "status status-" + status;
    statusBadge.textContent = hasOwn(statusLabels, status) ? statusLabels[status] : status;
  }

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function lastOfKind(kind) {
    for (var i = shown.length - 1; i >= 0; i -= 1) { if (shown[i].kind === kind) { return shown[i]; } }
    return null;
  }
  function seconds(first, last) {
    var s = Math.max(Date.parse(last.created_at) - Date.parse(first.created_at), 0) / 1000;
    return (s < 10 ? s.toFixed(1) : String(Math.round(s))) + " s";
  }
  function answerCheck() {
    var check = lastOfKind("grade_answer");
    if (!check) {
      if (lastOfKind("error")) { return "failed"; }
      var draft = lastOfKind("generate");
      return draft && draft.payload && draft.payload.fallback ? "no relevant documents" : "answer not checked";
    }
    var p = check.payload || {};
    var verdict = p.declined ? "not in the documents" : p.faithful ? "faithful" : "not faithful";
    return "answer checked: " + verdict + (lastOfKind("refine") ? " (refined)" : "");
  }
  // Documents graded, each counted once: a broadened search can return a chunk graded before.
  function gradedDocuments() {
    var passedByChunk = {};
    shown.forEach(function (e) {
      if (e.kind !== "grade") { return; }
      var p = e.payload || {};
      passedByChunk[(p.document || {}).chunk_id || "seq-" + e.seq] = Boolean(p.passed);
    });
    var verdicts = Object.keys(passedByChunk).map(function (k) { return passedByChunk[k]; });
    return { graded: verdicts.length, kept: verdicts.filter(Boolean).length };
  }
  // One line for the folded trace: "5 documents graded, 4 kept · answer checked: faithful · 25 s".
  function traceSummary() {
    var documents = gradedDocuments();
    var parts = [];
    if (documents.graded) { parts.push(plural(documents.graded, "document") + " graded, " + documents.kept + " kept"); }
    parts.push(answerCheck());
    parts.push(seconds(shown[0], shown[shown.length - 1]));
    return parts.join(" · ");
  }

  function finish() {
    if (finished) { return; }
    finished = true;
    var waiting = document.getElementById("waiting");
    if (waiting) { waiting.hidden = true; }
    summaryBox.textContent = traceSummary();
    if (window.traceSource) { window.traceSource.close(); }
    if (config.dataset.answerShown) { return; }  // rendered with the page
    // Held here: in a thread's replay the next turn may have started when the answer comes.
    var box = answerBox;
    fetch(answerUrl, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) { showAnswer(box, html); })
      .catch(function () {
        box.textContent = "The answer could not be loaded; reload the page.";
      });
  }

  function showAnswer(box, html) {
    box.innerHTML = html;  // server-rendered and sanitized
    revealCopyButtons();
    // Live, the answer lands above the trace the reader was following: point them to it.
    if (!replay) { document.getElementById("answer-ready").hidden = false; }
  }

  // Copy buttons carry what they copy (data-copy-text, or data-copy-url made absolute). They
  // stay hidden without a clipboard to write to: plain http to a remote host has none.
  function revealCopyButtons() {
    if (!navigator.clipboard || !window.isSecureContext) { return; }
    document.querySelectorAll(".copy-button[hidden]").forEach(function (b) { b.hidden = false; });
  }
  function copyFrom(button) {
    var value = button.dataset.copyUrl ? new URL(button.dataset.copyUrl, location.href).href : button.dataset.copyText;
    var status = button.parentNode.querySelector(".copy-status");
    navigator.clipboard.writeText(value).then(
      function () { status.textContent = "Copied."; },
      function () { status.textContent = "Could not copy: the browser refused."; }
    );
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".copy-button");
    if (button) { copyFrom(button); }
  });
  revealCopyButtons();

  var stored = JSON.parse(document.getElementById("trace-data").textContent);

  if (replay) {
    // Replay: the stored events again, spaced as they originally were (divided by the speed).
    // A thread's is a list of turns ({events, answer_url}), each played into its own section
    // (.thread-turn, revealed as it starts), a second apart; a run's is one turn.
    var turns = config.dataset.thread ? stored : [{ events: stored, answer_url: answerUrl }];
    var sections = document.querySelectorAll(".thread-turn");
    var speed = document.getElementById("replay-speed");
    var turn = -1;
    var events = [];
    var next = 0;
    var timer = null;
    var startTurn = function (i) {
      turn = i;
      events = turns[i].events;
      next = 0;
      lastSeq = 0;  // each run's seqs start again at 1
      shown = [];
      finished = false;
      answerUrl = turns[i].answer_url;
      var section = sections[i];
      if (section) {
        section.hidden = false;
        list = section.querySelector(".trace");
        summaryBox = section.querySelector(".trace-summary");
        answerBox = section.querySelector(".answer");
      }
    };
    // False when every turn has been played.
    var advance = function () {
      while (next >= events.length) {
        if (turn + 1 >= turns.length) { return false; }
        startTurn(turn + 1);
      }
      return true;
    };
    var step = function () {
      if (!advance()) { return; }
      renderLine(events[next]);
      next += 1;
      var gap = next < events.length
        ? Date.parse(events[next].created_at) - Date.parse(events[next - 1].created_at)
        : 1000;  // between one run's end and the next run's start
      timer = setTimeout(step, Math.min(Math.max(gap, 0), 10000) / Number(speed.value || 1));
    };
    document.getElementById("replay-all").addEventListener("click", function () {
      clearTimeout(timer);
      while (advance()) { renderLine(events[next]); next += 1; }
    });
    var waiting = document.getElementById("waiting");
    if (waiting) { waiting.hidden = true; }
    startTurn(0);
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
