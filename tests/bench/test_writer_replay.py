"""bench/writer_replay.py writes a run's draft again from the documents its writer read.

A variant of the writer is only measured fairly if the replay gives the writer what the run gave
it: the same hits, cut to the same excerpts, with the same ones usable. The fake writer answers
from the documents it is shown, so a replay that rebuilt them wrongly writes another answer.
"""

import json
import sys
from dataclasses import replace

import pytest
from langchain_openai import ChatOpenAI

from ragapp.graph import prompts
from ragapp.models import Chunk
from ragapp.providers.chat import get_chat_models
from tests.bench.test_export_drafts import evaluate

pytestmark = pytest.mark.django_db


@pytest.fixture
def replayed(tmp_path, knowledge_base, fake_chat, settings, load_bench):
    """The bench module, and one answered run of `eval_rag --name replayed` with excerpts on."""
    settings.RAG_TOP_K = 2
    settings.RAG_EXCERPT_CHARS = 300  # the local default: later hits shown as excerpts
    run = evaluate(tmp_path, "replayed")
    assert run.status == "answered"
    return load_bench("writer_replay"), run, tmp_path / "golden.jsonl"


def test_the_replay_writes_the_runs_draft_again_from_the_same_documents(replayed):
    bench, run, golden = replayed
    cases, skipped = bench.replayable("replayed", golden)
    assert skipped == {}
    [case] = cases
    assert case.recorded == run.answer
    assert [doc.chunk_id for doc in case.documents] == [
        doc["chunk_id"] for doc in run.events.get(kind="retrieve").payload["documents"]
    ]
    assert case.usable == run.events.get(kind="generate").payload["usable"]

    report = bench.replay(cases, ["base", "question-last"])
    assert report["base"][0]["text"] == run.answer  # the same documents, the same answer
    # The fake writer quotes the last line it read, the excerpt's, not the port: wrong, as the
    # evaluation scored it.
    assert "9000" not in run.answer
    assert [row["right"] for row in report["the run's answer"]] == [False]
    assert [row["right"] for row in report["base"]] == [False]
    assert bench.summary(report, cases).splitlines()[1:] == [
        "the run's answer        0     0     0",
        "base                    0     0     0",
        "question-last           0     0     0",
    ]
    # A draft is right when it states every expected fact.
    report["question-last"][0] = bench._row(case, "It listens on port 9000. [1]")
    assert bench.summary(report, cases).splitlines()[-1] == (
        "question-last           1     1     0   won p; lost -"
    )


def test_question_last_says_the_question_again_after_the_task(replayed):
    bench, run, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    _, (system, body) = bench._asked(object(), case, "question-last")
    _, (same_system, product) = bench._asked(object(), case, "base")
    assert system.content == same_system.content
    assert body.content == f"{product.content}\n\nThe question, once more: {run.query}"


def test_source_first_begins_the_reply_for_the_writer_to_continue(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    _, asked = bench._asked(object(), case, "source-first")
    _, product = bench._asked(object(), case, "base")
    assert asked[:-1] == product
    assert (asked[-1].type, asked[-1].content) == ("ai", "According to document [")


def test_no_parts_leaves_out_only_the_sentence_about_several_asks(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    _, (system, body) = bench._asked(object(), case, "no-parts")
    _, (same_system, product) = bench._asked(object(), case, "base")
    assert system.content == same_system.content
    assert bench.PARTS_SENTENCE in product.content
    assert body.content == product.content.replace(bench.PARTS_SENTENCE, "")


def test_first_opens_the_task_with_a_pointer_to_the_first_document(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    _, (system, body) = bench._asked(object(), case, "first")
    _, (same_system, product) = bench._asked(object(), case, "base")
    assert system.content == same_system.content
    prefix, task = product.content.rsplit("\n\n", 1)
    assert task.startswith("Answer the question using only")
    assert (
        body.content
        == f"{prefix}\n\nDocument [1] is the one most likely to hold the answer. {task}"
    )


def test_point_asks_the_writer_first_and_opens_the_task_with_its_pick(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    # The fake writer's one-token reply names no document ("yes" or "no"): the first hit.
    writer, asked = bench._asked(get_chat_models().generator, case, "point")
    assert writer is get_chat_models().generator
    assert asked == bench._asked(object(), case, "first")[1]


def test_point_names_the_most_probable_document_among_those_shown(load_bench):
    pointed_number = load_bench("writer_replay").pointed_number
    top = [
        {"token": "7", "logprob": -0.1},  # not a document of these five
        {"token": "The", "logprob": -0.5},
        {"token": " 3", "logprob": -1.0},
        {"token": "2", "logprob": -2.0},
    ]
    assert pointed_number(top, 5) == 3
    assert pointed_number(top[:2], 5) == 1  # no document named: the first hit
    assert pointed_number([], 5) == 1


def test_oracle_shows_only_the_documents_that_hold_an_expected_fact(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    [holder] = [doc for doc in case.documents if "9000" in (doc.excerpt or doc.text)]
    assert len(case.documents) == 2  # the other hit holds no expected fact
    assert bench.oracle_documents(case) == [holder]
    _, asked = bench._asked(object(), case, "oracle")
    assert asked == prompts.generate_messages(case.question, [holder])
    assert asked != bench._asked(object(), case, "base")[1]


def test_oracle_asks_as_base_when_no_document_shown_holds_every_fact(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    unshown = case._replace(item=replace(case.item, facts=("9000", "a fact no page states")))
    assert bench.oracle_documents(unshown) is None
    asked = bench._asked(object(), unshown, "oracle")[1]
    assert asked == bench._asked(object(), unshown, "base")[1]


def test_a_sampled_variant_binds_its_temperature_and_seed(replayed):
    bench, _, golden = replayed
    [case], _ = bench.replayable("replayed", golden)
    # The local writer's client, which asks at temperature 0; no request is sent.
    client = ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:9/v1", temperature=0)
    model, asked = bench._asked(client, case, "sample:0.7:3")
    assert asked == bench._asked(object(), case, "base")[1]
    # What the server is asked: the bound temperature and seed replace the client's greedy 0.
    payload = model.bound._get_request_payload(asked, stream=True, **model.kwargs)
    assert (payload["temperature"], payload["seed"]) == (0.7, 3)
    for bad in ("sample:0:1", "sample:0.7", "sample:x:1", "sample:0.7:-1", "sample:inf:1"):
        with pytest.raises(SystemExit, match="Unknown variant"):
            bench._check_variant(bad)


def test_the_summary_counts_questions_any_sampled_draft_got_right(replayed):
    bench, _, golden = replayed
    cases, _ = bench.replayable("replayed", golden)
    report = bench.replay(cases, ["base", "sample:0.7:1", "sample:0.7:2"])
    assert bench.summary(report, cases).splitlines()[-2:] == [
        "any of 3 drafts         0     0     0",
        "consensus pick          0     0     0",
    ]
    report["sample:0.7:2"][0] = bench._row(cases[0], "It listens on port 9000. [1]")
    # One right draft of three: within reach, but the other two agree with each other.
    assert bench.summary(report, cases).splitlines()[-2:] == [
        "any of 3 drafts         1     1     0   won p; lost -",
        "consensus pick          0     0     0",
    ]
    report["sample:0.7:1"][0] = bench._row(cases[0], "It listens on port 9000 by default. [1]")
    assert bench.summary(report, cases).splitlines()[-1] == (
        "consensus pick          1     1     0   won p; lost -"
    )


def test_a_replay_keeps_its_drafts_after_every_question(replayed, tmp_path):
    bench, run, golden = replayed
    cases, _ = bench.replayable("replayed", golden)
    progress = tmp_path / "progress.json"
    bench.replay(cases, ["base"], progress=progress)
    saved = json.loads(progress.read_text())
    assert [row["text"] for row in saved["base"]] == [run.answer]


def test_the_consensus_is_the_draft_the_others_agree_with(load_bench):
    bench = load_bench("writer_replay")
    drafts = ["Port 8000 on 127.0.0.1.", "It listens on port 9000.", "Port 8000, on 127.0.0.1."]
    assert bench.consensus(drafts) == 0
    # A sentence's full stop is not part of its last word.
    assert bench.consensus(["Port 8000", "Port 9000.", "Port 9000"]) == 1
    assert bench.consensus(["a", "b"]) == 0  # a tie goes to the first, the greedy draft


def test_a_run_whose_hits_are_not_found_again_is_left_out(replayed, capsys):
    bench, run, golden = replayed
    # The knowledge base changed since the run: its first hit is gone.
    hit = run.events.get(kind="retrieve").payload["documents"][0]["chunk_id"]
    Chunk.objects.filter(pk=hit).delete()
    cases, skipped = bench.replayable("replayed", golden)
    assert cases == [] and skipped == {"hits not found again": 1}
    assert "not the run's hits" in capsys.readouterr().err


def test_a_prefiltered_hit_is_not_among_the_writers_documents(
    tmp_path, knowledge_base, fake_chat, settings, load_bench
):
    settings.RAG_TOP_K = 2
    probe = evaluate(tmp_path, "probe")
    first, second = probe.events.get(kind="retrieve").payload["documents"]
    # Between the two hits' similarities: the second is never shown to the judge or the writer.
    settings.RAG_RELEVANCE_PREFILTER = (first["similarity"] + second["similarity"]) / 2
    run = evaluate(tmp_path, "filtered")
    assert [g.payload["prefiltered"] for g in run.events.filter(kind="grade")] == [False, True]

    bench = load_bench("writer_replay")
    [case], _ = bench.replayable("filtered", tmp_path / "golden.jsonl")
    assert [doc.chunk_id for doc in case.documents] == [first["chunk_id"]]
    assert case.usable == run.events.get(kind="generate").payload["usable"] == [1]
    assert bench.replay([case], ["base"])["base"][0]["text"] == run.answer


def test_the_answer_cap_is_the_evaluations_and_the_reply_is_kept_as_the_graph_keeps_it(
    tmp_path, knowledge_base, fake_chat, settings, load_bench
):
    settings.RAG_ANSWER_MAX_TOKENS = 6  # the fake counts a word as a token
    run = evaluate(tmp_path, "capped")
    assert run.events.get(kind="generate").payload["capped"] is True
    settings.RAG_ANSWER_MAX_TOKENS = 0  # this shell's setting is not the evaluation's

    bench = load_bench("writer_replay")
    assert bench.answer_cap("capped") == 6
    cases, _ = bench.replayable("capped", tmp_path / "golden.jsonl")
    report = bench.replay(cases, ["base"], answer_max_tokens=bench.answer_cap("capped"))
    assert get_chat_models().generator.script.answer_caps[-1] == 6
    # Cut at the cap, then its unfinished sentence cut, as the run's answer was.
    assert report["base"][0]["text"] == run.answer


def test_base_drafts_can_come_from_an_earlier_replay(replayed, tmp_path, monkeypatch, capsys):
    bench, run, golden = replayed
    earlier = tmp_path / "out" / "earlier.json"  # a folder not made yet, as bench/out/ in a clone
    monkeypatch.setattr(
        sys, "argv", ["writer_replay.py", "replayed", str(golden), "--json", str(earlier)]
    )
    bench.main()
    rows = json.loads(earlier.read_text())
    assert [row["text"] for row in rows["base"]] == [run.answer]

    rows["base"][0] = {"id": "p", "right": True, "text": "It listens on port 9000."}
    earlier.write_text(json.dumps(rows))
    calls = get_chat_models().generator.script.calls
    before = calls.count("generate")
    argv = ["writer_replay.py", "replayed", str(golden), "--variants", "question-last"]
    monkeypatch.setattr(sys, "argv", [*argv, "--against", str(earlier)])
    bench.main()
    assert calls.count("generate") == before + 1  # question-last only: base was not written
    assert "question-last           0     0     1   won -; lost p" in capsys.readouterr().out

    earlier.write_text(json.dumps({"base": []}))
    with pytest.raises(SystemExit, match="holds no base drafts for these questions"):
        bench.main()


def test_an_unknown_variant_stops_with_the_names_to_choose_from(replayed, monkeypatch):
    bench, _, golden = replayed
    argv = ["writer_replay.py", "replayed", str(golden), "--variants", "x"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="Unknown variant 'x'; choose from base, question-last"):
        bench.main()


def test_an_unknown_evaluation_stops_with_its_name(replayed):
    bench, _, golden = replayed
    with pytest.raises(SystemExit, match="No evaluation called 'nope'"):
        bench.replayable("nope", golden)


def test_the_nudge_needs_a_llama_cpp_writer_and_pushes_the_documents_own_spelling(replayed):
    bench, _, golden = replayed
    cases, _ = bench.replayable("replayed", golden)
    with pytest.raises(SystemExit, match=r"needs a writer on a llama\.cpp server"):
        bench.replay(cases, ["bias:1"])
    # The lexical check compares case-folded; the nudge uses the spelling the documents use.
    assert bench.spellings("Set `authorityInfoAccess` in the CA section; sign with `-CAkey`.") == {
        "authorityInfoAccess",
        "-CAkey",
    }
