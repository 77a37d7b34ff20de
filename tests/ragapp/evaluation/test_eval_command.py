"""`manage.py eval_rag` end to end: the real graph with the fake models, reports, CI floor."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models import F
from django.utils import timezone

from ragapp.evaluation.machine import describe_machine, machine_line
from ragapp.models import EmbeddingIndex, Evaluation, QueryRun
from ragapp.selectors import knowledge_base_version

pytestmark = pytest.mark.django_db

GOLDEN = [
    {
        "id": "beta-port",
        "question": "Which port does the beta service listen on?",
        "answerable": True,
        "sources": ["beta.md"],
        "facts": ["9000"],
    },
    {
        "id": "alpha-config",
        "question": "Where does alpha configuration live?",
        "answerable": True,
        "sources": ["alpha.md"],
        "facts": ["alpha.toml"],
    },
    {
        "id": "saml",
        "question": "How do I set up SAML single sign-on?",
        "answerable": False,
        "sources": [],
        "facts": [],
    },
]


@pytest.fixture
def golden(tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text("\n".join(json.dumps(item) for item in GOLDEN) + "\n")
    return path


@pytest.fixture
def fake_chat(fake_chat, settings):
    settings.RAG_TOP_K = 2


def run(*args) -> str:
    out = StringIO()
    call_command("eval_rag", *map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


def test_retrieval_only_needs_no_chat_model_and_writes_both_reports(
    golden,
    tmp_path,
    knowledge_base,
    settings,
):
    settings.RAG_CHAT_PROVIDER = "openai"  # no key: building a chat client would fail
    settings.OPENAI_API_KEY = ""
    output = run(golden, "--retrieval-only", "--output", tmp_path / "out", "--k", "2")

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["mode"] == "retrieval" and report["questions"] == 3
    assert report["answerable"] == 2 and report["unanswerable"] == 1
    assert report["retrieval"]["recall_at_2"] == 1.0
    assert 0.5 <= report["retrieval"]["mrr_at_10"] <= 1.0
    assert "answers" not in report and not QueryRun.objects.exists()
    assert "recall@2" in output and "MRR@10" in output
    # Latencies are compared across machines only with the machine beside them.
    assert report["machine"] == describe_machine()
    assert machine_line(report["machine"]) in output
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.startswith("<!doctype html>") and html.count("<svg") == 2
    assert "Which port does the beta service listen on?" in html
    evaluation = Evaluation.objects.get()
    assert evaluation.mode == "retrieval" and evaluation.report["questions"] == 3


def test_full_evaluation_runs_the_graph_and_measures_answers_and_refusals(
    golden,
    tmp_path,
    knowledge_base,
    fake_chat,
):
    run(golden, "--output", tmp_path / "out", "--name", "nightly")

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    evaluation = Evaluation.objects.get(name="nightly")
    runs = QueryRun.objects.filter(evaluation=evaluation)
    assert runs.count() == 3  # stored like any other run, tagged with the evaluation
    items = {item["id"]: item for item in report["items"]}
    assert items["beta-port"]["status"] == "answered"
    assert items["beta-port"]["facts"] == {"9000": True} and items["beta-port"]["facts_ok"]
    assert items["saml"]["status"] == "refused"  # the fake finds no overlap: the fallback
    assert report["refusal"]["recall"] == 1.0
    answers = report["answers"]
    assert answers["answered"] + answers["refused"] + answers["failed"] == 3
    assert report["answers"]["fact_accuracy"] == pytest.approx(
        sum(1 for i in report["items"] if i["answerable"] and i["facts_ok"]) / 2
    )
    assert report["grading"]["expected_chunks_graded"] >= 2
    assert report["latency"]["run_ms"]["p50"] > 0
    assert set(report["latency"]["node_ms"]) >= {"retrieve", "grade_docs"}
    assert report["tokens"]["calls"] > 0 and report["tokens"]["per_run"] > 0
    assert 0 <= report["rates"]["broaden"] <= 1
    assert (tmp_path / "out" / "report.html").read_text().count("<svg") == 4


def test_compare_shows_deltas_against_an_earlier_report(golden, tmp_path, knowledge_base):
    run(golden, "--retrieval-only", "--output", tmp_path / "before")
    baseline = tmp_path / "before" / "report.json"
    old = json.loads(baseline.read_text())
    old["retrieval"]["recall_at_5"] = 0.5
    baseline.write_text(json.dumps(old))

    output = run(golden, "--retrieval-only", "--output", tmp_path / "after", "--compare", baseline)

    line = next(line for line in output.splitlines() if line.strip().startswith("recall@"))
    assert line.split()[1:] == ["0.500", "1.000", "+0.500", "better"]


def test_the_recall_floor_fails_the_command(golden, tmp_path, knowledge_base):
    missing = tmp_path / "missing.jsonl"
    missing.write_text(json.dumps({**GOLDEN[0], "id": "x", "sources": ["nowhere.md"]}) + "\n")
    with pytest.raises(CommandError, match=r"recall@5 is 0.000, below the floor of 0.9"):
        run(missing, "--retrieval-only", "--min-recall", "0.9", "--output", tmp_path / "o")
    run(golden, "--retrieval-only", "--min-recall", "0.9", "--output", tmp_path / "o2")


def test_clear_errors_for_a_bad_file_an_empty_knowledge_base_and_bad_flags(golden, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(CommandError, match="line 1: missing 'question'"):
        run(bad, "--retrieval-only")
    with pytest.raises(CommandError, match="The knowledge base is empty"):
        run(golden, "--retrieval-only")
    with pytest.raises(CommandError, match="at least 1"):
        run(golden, "--k", "0")
    with pytest.raises(CommandError, match="at least 1"):
        run(golden, "--sample", "0")
    with pytest.raises(CommandError, match="Cannot read the report"):
        run(golden, "--compare", tmp_path / "none.json")


def test_a_sample_keeps_every_unanswerable_question(golden, tmp_path, knowledge_base):
    run(golden, "--retrieval-only", "--sample", "2", "--output", tmp_path / "s")
    report = json.loads((tmp_path / "s" / "report.json").read_text())
    # The one unanswerable question, then answerable ones spread evenly, in file order.
    assert [item["id"] for item in report["items"]] == ["beta-port", "saml"]


def test_sample_items_spreads_the_answerable_questions():
    from ragapp.evaluation.golden import GoldenItem, sample_items

    items = [
        GoldenItem(
            id=f"q{i}", question="?", answerable=i % 5 != 0, sources=[], facts=[], section=""
        )
        for i in range(20)
    ]
    chosen = [item.id for item in sample_items(items, 8)]
    assert chosen == ["q0", "q1", "q5", "q6", "q10", "q11", "q15", "q16"]
    assert len(sample_items(items, 3)) == 3 and all(
        not item.answerable for item in sample_items(items, 3)
    )
    assert sample_items(items, 50) == items


def test_one_question_crashing_does_not_lose_the_evaluation(
    golden, tmp_path, knowledge_base, fake_chat, monkeypatch
):
    from ragapp.evaluation import harness

    real = harness.execute_run

    def crash_on_alpha(run, **kwargs):
        if "alpha" in run.query:
            raise RuntimeError("the model server went away")
        return real(run, **kwargs)

    monkeypatch.setattr(harness, "execute_run", crash_on_alpha)
    run(golden, "--output", tmp_path / "out")

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    items = {item["id"]: item for item in report["items"]}
    assert items["alpha-config"]["status"] == "failed"
    assert items["alpha-config"]["error"] == "RuntimeError: the model server went away"
    assert items["beta-port"]["status"] == "answered"
    assert report["rates"]["failed"] == pytest.approx(1 / 3)
    assert report["refusal"]["failed_left_out"] == 1
    assert Evaluation.objects.get().finished_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_database_behind_its_migrations_is_named_before_any_run(golden):
    # A knowledge base from before an upgrade failed every run with "column ... does not exist".
    call_command("migrate", "ragapp", "0003", verbosity=0)
    try:
        with pytest.raises(
            CommandError, match=r"missing [0-9]+ migration\(s\) \(ragapp.0004_run_h"
        ):
            run(golden, "--retrieval-only")
    finally:
        call_command("migrate", "ragapp", verbosity=0)
    assert not Evaluation.objects.exists()


def test_retrieval_is_measured_on_the_search_the_graph_made(
    tmp_path, knowledge_base, fake_chat, settings, monkeypatch
):
    """With RAG_HYDE the first search is for the question and the model's passage: a full
    evaluation measures that search (read from the run's trace), retrieval-only the question."""
    from ragapp.providers import fake_chat as fake_module

    passage = "To bring it up, run beta serve: the beta service then listens on port 9000."
    scripted = fake_module.FakeScript(hypothesize=lambda question: passage)
    monkeypatch.setattr(
        fake_module, "fake_chat_model", lambda name: fake_module.FakeChatModel(script=scripted)
    )
    settings.RAG_HYDE = True
    golden = tmp_path / "worded.jsonl"
    golden.write_text(
        json.dumps(
            {
                "id": "worded",
                "question": "How do I launch the module that answers requests?",
                "answerable": True,
                "sources": ["beta.md"],
                "facts": ["9000"],
            }
        )
        + "\n"
    )
    run(golden, "--k", "1", "--output", tmp_path / "full")
    run(golden, "--k", "1", "--retrieval-only", "--output", tmp_path / "question")

    full = json.loads((tmp_path / "full" / "report.json").read_text())
    alone = json.loads((tmp_path / "question" / "report.json").read_text())
    assert "hypothesize" in scripted.calls
    assert full["items"][0]["ranked_sources"][0] == "docs/beta.md"
    assert full["retrieval"]["recall_at_1"] == 1.0
    assert alone["items"][0]["ranked_sources"][0] != "docs/beta.md"
    assert alone["retrieval"]["recall_at_1"] == 0.0
    assert full["settings"]["RAG_HYDE"] is True


def _stop_at(monkeypatch, word: str) -> list[str]:
    """Make the run whose question holds `word` stop the command as Ctrl-C does; return the
    questions that reached the graph."""
    from ragapp.evaluation import harness
    from ragapp.runs.runner import execute_run as real

    asked = []

    def execute(run, **kwargs):
        asked.append(run.query)
        if word and word in run.query:
            raise KeyboardInterrupt
        return real(run, **kwargs)

    monkeypatch.setattr(harness, "execute_run", execute)
    return asked


def test_a_stopped_evaluation_resumes_with_only_its_unsettled_questions(
    golden, tmp_path, knowledge_base, fake_chat, monkeypatch
):
    _stop_at(monkeypatch, "alpha")
    with pytest.raises(CommandError, match=r"Stopped after 1 of 3 questions") as stopped:
        run(golden, "--name", "nightly", "--output", tmp_path / "never")
    evaluation = Evaluation.objects.get(name="nightly")
    assert f"eval_rag --resume {evaluation.pk}" in str(stopped.value)
    assert evaluation.finished_at is None and not list((tmp_path / "never").iterdir())
    assert evaluation.selection == {
        "k": 5,
        "ids": ["beta-port", "alpha-config", "saml"],
        "machine": describe_machine(),
    }
    assert evaluation.golden_path == str(golden.resolve())
    cut = evaluation.runs.get(query=GOLDEN[1]["question"])
    assert cut.status == "failed" and cut.error.startswith("The evaluation was stopped while")

    asked = _stop_at(monkeypatch, "")
    output = run("--resume", evaluation.pk, "--output", tmp_path / "out")

    # The answered beta question is read back from its run, not asked again.
    assert asked == [GOLDEN[1]["question"], GOLDEN[2]["question"]]
    assert output.startswith(
        f"Resuming evaluation {evaluation.pk} (nightly): 1 of 3 questions read back"
    )
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [item["id"] for item in report["items"]] == ["beta-port", "alpha-config", "saml"]
    items = {item["id"]: item for item in report["items"]}
    assert items["beta-port"]["status"] == "answered" and items["beta-port"]["facts_ok"]
    assert items["alpha-config"]["status"] == "answered"
    assert items["saml"]["status"] == "refused"
    assert report["resumed"] == {"questions": 1, "machine_then": describe_machine()}
    assert report["name"] == "nightly" and report["golden"] == str(golden.resolve())
    evaluation.refresh_from_db()
    assert evaluation.finished_at is not None and evaluation.questions == 3
    with pytest.raises(CommandError, match=r"\(nightly\) finished at .*nothing to resume"):
        run("--resume", evaluation.pk)


def test_resume_last_keeps_the_sample_and_k_of_the_first_start(
    golden, tmp_path, knowledge_base, fake_chat, monkeypatch
):
    _stop_at(monkeypatch, "SAML")
    with pytest.raises(CommandError, match=r"Stopped after 1 of 2 questions"):
        run(golden, "--sample", "2", "--k", "1")
    asked = _stop_at(monkeypatch, "")
    run("--resume", "last", "--output", tmp_path / "out")

    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert asked == [GOLDEN[2]["question"]]
    assert [item["id"] for item in report["items"]] == ["beta-port", "saml"]
    assert report["k"] == 1 and "recall_at_1" in report["retrieval"]
    with pytest.raises(CommandError, match="No unfinished evaluation to resume"):
        run("--resume", "last")


def test_resume_refuses_other_settings_another_knowledge_base_and_bad_references(
    golden, tmp_path, knowledge_base, fake_chat, settings, monkeypatch
):
    _stop_at(monkeypatch, "alpha")
    with pytest.raises(CommandError, match="Stopped after 1 of 3"):
        run(golden)
    evaluation = Evaluation.objects.get()
    _stop_at(monkeypatch, "")

    settings.RAG_TOP_K = 3
    with pytest.raises(CommandError, match=r"other settings.*RAG_TOP_K is 3 now, 2 then"):
        run("--resume", evaluation.pk)
    settings.RAG_TOP_K = 2

    before = knowledge_base_version()
    EmbeddingIndex.objects.update(version=F("version") + 1)  # an ingest since
    changed = rf"knowledge base changed .*\(version {before} then, {before + 1} now"
    with pytest.raises(CommandError, match=changed):
        run("--resume", evaluation.pk)
    EmbeddingIndex.objects.update(version=F("version") - 1)

    with pytest.raises(CommandError, match="give none of them"):
        run(golden, "--resume", evaluation.pk)
    with pytest.raises(CommandError, match="give none of them"):
        run("--resume", evaluation.pk, "--sample", "2")
    with pytest.raises(CommandError, match="Name a golden set"):
        run()
    with pytest.raises(CommandError, match="'nightly' is not an evaluation id"):
        run("--resume", "nightly")
    with pytest.raises(CommandError, match="No evaluation 00000000-"):
        run("--resume", "00000000-0000-0000-0000-000000000000")

    golden.write_text(json.dumps(GOLDEN[0]) + "\n")  # the file lost two of its questions
    with pytest.raises(CommandError, match=r"no longer holds 2 of its questions \(alpha-config"):
        run("--resume", evaluation.pk)


def test_an_evaluation_from_before_resuming_existed_says_so(golden, knowledge_base):
    from ragapp.services import evaluation_create

    old = evaluation_create(name="old", golden_path=str(golden), mode="full", settings={})
    with pytest.raises(CommandError, match=r"does not record its questions .* start it again"):
        run("--resume", old.pk)


def test_resume_reads_back_the_products_failures_and_asks_again_what_the_stop_cut_off(
    golden, tmp_path, knowledge_base, fake_chat, monkeypatch
):
    from ragapp.providers import fake_chat as fake_module

    def generate(question, docs):
        if "alpha" in question:
            raise RuntimeError("the model server went away")
        return fake_module._default_generate(question, docs)

    scripted = fake_module.FakeScript(generate=generate)
    monkeypatch.setattr(
        fake_module, "fake_chat_model", lambda name: fake_module.FakeChatModel(script=scripted)
    )
    _stop_at(monkeypatch, "SAML")
    with pytest.raises(CommandError, match="Stopped after 2 of 3"):
        run(golden)
    evaluation = Evaluation.objects.get()
    alpha = evaluation.runs.get(query=GOLDEN[1]["question"])
    assert alpha.status == "failed" and "went away" in alpha.error
    # The process dies (kill -9) while the SAML question runs: its run stays `running`.
    saml = evaluation.runs.filter(query=GOLDEN[2]["question"])
    saml.update(status="running", error="", heartbeat_at=timezone.now())
    with pytest.raises(CommandError, match=r"is still going: its run .*\(RAG_RUN_STALE_SECONDS\)"):
        run("--resume", "last")
    saml.update(heartbeat_at=timezone.now() - timedelta(hours=1))

    asked = _stop_at(monkeypatch, "")
    run("--resume", "last", "--output", tmp_path / "out")

    # The product's failure is its answer and stands; the killed run's question is asked again.
    assert asked == [GOLDEN[2]["question"]]
    assert [run.error[:38] for run in saml.order_by("created_at")] == [
        "The process executing this run stopped",
        "",
    ]
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    items = {item["id"]: item for item in report["items"]}
    assert items["alpha-config"]["status"] == "failed"
    assert "went away" in items["alpha-config"]["error"]
    assert items["saml"]["status"] == "refused"
    assert report["resumed"]["questions"] == 2


def test_a_report_folder_that_cannot_be_written_stops_before_any_question(
    golden, tmp_path, knowledge_base, fake_chat, monkeypatch
):
    asked = _stop_at(monkeypatch, "")
    (tmp_path / "file").write_text("")
    with pytest.raises(CommandError, match="Cannot write the report to"):
        run(golden, "--output", tmp_path / "file" / "out")
    assert asked == [] and not Evaluation.objects.exists()
