"""The trace events as OpenAPI components: one schema per kind, told apart by `kind`.

These serializers only describe: events are written by the graph (`ragapp/trace/emitter.py`)
and sent as stored. tests/ragapp/api/test_schema.py checks real events of real runs against these
schemas, so the documentation cannot drift from what the graph emits.
"""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from ragapp.models import QueryRun
from ragapp.trace.kinds import EventKind

RISKS = QueryRun.Risk.choices
FINAL_STATUSES = [QueryRun.Status.ANSWERED, QueryRun.Status.REFUSED, QueryRun.Status.FAILED]


class DocumentSummarySerializer(serializers.Serializer):
    """A retrieved chunk, named but never quoted."""

    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    title = serializers.CharField()
    source_path = serializers.CharField(
        help_text="The file's path relative to its ingest root; never an absolute server path."
    )
    heading_path = serializers.CharField(allow_blank=True)
    similarity = serializers.FloatField(help_text="Cosine similarity to the search query.")
    has_code = serializers.BooleanField()
    url = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="The published page, with the section's anchor or #page=N; empty when the "
        "documents were ingested without --base-url. As it was when the run ran.",
    )


class CitedSourceSerializer(DocumentSummarySerializer):
    """A source of an answer, with its citation number."""

    n = serializers.IntegerField(help_text="The answer cites this source as [n].")
    cited = serializers.BooleanField(help_text="Whether the answer text contains [n].")


class ReusePayload(serializers.Serializer):
    reused_run = serializers.UUIDField(
        help_text="The earlier run whose answer this run gives: always the original, never a "
        "reuse. Another user's run is named but not shown to you."
    )
    match = serializers.ChoiceField(
        choices=["exact", "near"],
        help_text="exact: the same question once normalised; near: a question whose embedding "
        "is at least RAG_REUSE_NEAR_THRESHOLD similar.",
    )
    similarity = serializers.FloatField(help_text="Cosine similarity of the questions; 1 if exact.")
    index_version = serializers.IntegerField(
        min_value=0, help_text="The knowledge base's version the answer was made at (current)."
    )
    same_owner = serializers.BooleanField(help_text="Whether you asked the earlier run.")
    question = serializers.CharField(
        required=False,
        help_text="The earlier question, only when you asked it yourself.",
    )


class RetrievePayload(serializers.Serializer):
    query = serializers.CharField(allow_blank=True)
    iteration = serializers.IntegerField(min_value=1, max_value=3)
    mode = serializers.ChoiceField(choices=["vector", "hybrid"])
    docs_found = serializers.IntegerField(min_value=0)
    documents = DocumentSummarySerializer(many=True)
    excerpted = serializers.IntegerField(min_value=0, required=False)  # absent in older runs
    # Absent in older runs; empty unless RAG_REFUSE_UNKNOWN_NAMES found some.
    unknown_names = serializers.ListField(child=serializers.CharField(), required=False)
    # Only in a first retrieval with RAG_HYDE (and not when the question names what no chunk
    # holds): the passage searched for with the question, or why there is none.
    hypothesis = serializers.CharField(
        allow_blank=True,
        required=False,
        help_text="The passage the model wrote for the question, searched for with it; never "
        "shown to a judge or the writer.",
    )
    hypothesis_ms = serializers.FloatField(required=False)
    hypothesis_problem = serializers.CharField(
        allow_blank=True, required=False, help_text="Why no passage was written; empty if one was."
    )
    read_on = serializers.BooleanField(
        required=False,
        help_text="Present and true on a second read of the pages already found, after the "
        "answer was refused (RAG_READ_ON): their chunks the writer had not read, not a new search.",
    )
    duration_ms = serializers.FloatField()


class GradePayload(serializers.Serializer):
    index = serializers.IntegerField(min_value=1)
    total = serializers.IntegerField(min_value=1)
    document = DocumentSummarySerializer()
    score = serializers.FloatField(
        min_value=0,
        max_value=1,
        allow_null=True,
        help_text="null: the judge was not asked (a chunk ranked above passed first).",
    )
    relevant = serializers.BooleanField()
    passed = serializers.BooleanField(
        help_text="score >= threshold, or its retrieval's best score is (RAG_RELEVANCE_GATE): "
        "used for the answer."
    )
    reasoning = serializers.CharField(allow_blank=True)
    threshold = serializers.FloatField()
    prefiltered = serializers.BooleanField(
        help_text="True: too far from the question in embedding space; no model was asked."
    )


class GradeDocsPayload(serializers.Serializer):
    passed = serializers.IntegerField(min_value=0)
    total = serializers.IntegerField(min_value=0)
    kept_overall = serializers.IntegerField(min_value=0)
    doubtful = serializers.BooleanField(
        required=False,
        help_text="True when no verdict reached the relevance threshold but the best reached "
        "RAG_RELEVANCE_DOUBT_FLOOR: the chunks passed as doubtful, and the answer is held to "
        "RAG_DOUBTFUL_ANSWER_THRESHOLD (absent in runs before 2026-12-07, stop 67).",
    )
    duration_ms = serializers.FloatField()


class CondensePayload(serializers.Serializer):
    original_question = serializers.CharField(help_text="The follow-up as the user asked it.")
    standalone_question = serializers.CharField(
        help_text="What the run answers: the model's standalone question, or the follow-up "
        "itself when condensing fell back."
    )
    turns = serializers.IntegerField(min_value=1, help_text="Earlier turns the model was shown.")
    fallback = serializers.BooleanField(help_text="True: the follow-up was used as asked.")
    reason = serializers.CharField(
        allow_blank=True,
        help_text="Why it fell back, or how the model's question was repaired (it repeated an "
        "earlier question, or left a reference unresolved); empty otherwise.",
    )
    duration_ms = serializers.FloatField()


class BroadenPayload(serializers.Serializer):
    old_query = serializers.CharField(allow_blank=True)
    new_query = serializers.CharField(allow_blank=True)
    iteration = serializers.IntegerField(min_value=1)
    duration_ms = serializers.FloatField()


class GeneratePayload(serializers.Serializer):
    fallback = serializers.BooleanField(help_text="True: no chunk passed, no model was called.")
    sources = DocumentSummarySerializer(many=True)
    usable = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        help_text="The [n] numbers of the sources in the prompt's documents block (not for the "
        "fallback): the answer may cite only these.",
    )
    answer_chars = serializers.IntegerField(min_value=0)
    capped = serializers.BooleanField(
        required=False,
        help_text="Whether the reply ran into RAG_ANSWER_MAX_TOKENS (not for the fallback; "
        "absent in older runs).",
    )
    unfinished_cut_chars = serializers.IntegerField(
        min_value=0,
        required=False,
        help_text="Characters of an unfinished last sentence or code block cut from a capped "
        "reply (not for the fallback; absent in older runs).",
    )
    repetition_cut_chars = serializers.IntegerField(
        min_value=0,
        required=False,
        help_text="Characters cut where the model started repeating itself (not for the "
        "fallback; absent in older runs).",
    )
    unjudged_cut_chars = serializers.IntegerField(
        min_value=0,
        required=False,
        help_text="Characters cut after the last claim the answer check judges (with the "
        "claims check; not for the fallback; absent in older runs).",
    )
    stopped_repeating = serializers.BooleanField(
        required=False,
        help_text="Whether the reply was stopped while being written, at its first finished "
        "copy of a sentence or code block (not for the fallback; absent in older runs).",
    )
    stopped_past_judged = serializers.BooleanField(
        required=False,
        help_text="Whether the reply was stopped while being written once it had finished a "
        "claim after the last one the claims check judges: nothing more would have been shown "
        "(not for the fallback; absent in runs before 2026-12-07).",
    )
    opening_doubted = serializers.BooleanField(
        required=False,
        help_text="After a doubtful retrieval: whether the reply was stopped once its opening "
        "claim was written, because the answer check doubted it at the doubtful threshold "
        "(not for the fallback; absent in runs before 2026-12-07, stop 67).",
    )
    duration_ms = serializers.FloatField(required=False, help_text="Absent for the fallback.")


class GradeAnswerPayload(serializers.Serializer):
    faithfulness_score = serializers.FloatField(min_value=0, max_value=1)
    hallucination_risk = serializers.ChoiceField(choices=RISKS)
    problematic_claims = serializers.ListField(child=serializers.CharField())
    refinement_suggestion = serializers.CharField(allow_blank=True)
    reasoning = serializers.CharField(allow_blank=True)
    faithful = serializers.BooleanField()
    declined = serializers.BooleanField(
        required=False,
        help_text="The answer says the documents do not cover the question: the run is "
        "refused (not_in_documents) with no check and no refinement.",
    )
    threshold = serializers.FloatField()
    after_refinement = serializers.BooleanField()
    duration_ms = serializers.FloatField()
    supporting_documents = DocumentSummarySerializer(
        many=True,
        required=False,
        help_text="Passages of the usable documents' own pages that the check added because they "
        "hold specifics of the answer (an option, a setting) the documents shown lacked. They "
        "are usable documents from then on, numbered after the others; empty when none was "
        "needed or found (lexical and claims checks only).",
    )


class RefinePayload(serializers.Serializer):
    problematic_claims = serializers.ListField(child=serializers.CharField())
    method = serializers.ChoiceField(
        required=False,
        choices=["rewrite", "prune"],
        help_text="rewrite: the generation model rewrote the answer; prune: the sentences the "
        "claims check flagged were cut out, with no model call.",
    )
    before_chars = serializers.IntegerField(min_value=0)
    after_chars = serializers.IntegerField(min_value=0)
    unrevised = serializers.BooleanField(
        required=False,
        help_text="True when the refinement left nothing new to check (pruning cut the whole "
        "answer, or a rewrite changed nothing): the run ends refused as unfaithful with no second "
        "grade_answer. Absent in events stored before 2026-12-07.",
    )
    duration_ms = serializers.FloatField()


REFUSAL_REASONS = ["", "no_relevant_documents", "not_in_documents", "unfaithful"]


class PassageSerializer(serializers.Serializer):
    """One of the closest passages a refusal shows, labelled as a passage, not an answer."""

    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    title = serializers.CharField(allow_blank=True)
    source_path = serializers.CharField(help_text="Relative to its ingest root.")
    heading_path = serializers.CharField(allow_blank=True)
    similarity = serializers.FloatField()
    has_code = serializers.BooleanField()
    url = serializers.CharField(required=False, allow_blank=True, help_text="Its published page.")
    relevance = serializers.FloatField(
        allow_null=True, help_text="The relevance judge's score, 0 to 1; null: not asked."
    )
    excerpt = serializers.CharField(help_text="The passage's text, at most 400 characters.")


class AnswerMetadataSerializer(serializers.Serializer):
    total_ms = serializers.FloatField()
    tokens = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="Per model: input, output and calls.",
    )
    cost_usd = serializers.FloatField(allow_null=True)
    models = serializers.DictField(child=serializers.CharField(allow_null=True))


class AnswerPayload(serializers.Serializer):
    status = serializers.ChoiceField(choices=FINAL_STATUSES[:2])
    answer = serializers.CharField(allow_blank=True, help_text="Markdown; render it sanitized.")
    faithfulness_score = serializers.FloatField(allow_null=True)
    hallucination_risk = serializers.ChoiceField(
        choices=RISKS, allow_blank=True, help_text="Empty when the fallback was used."
    )
    problematic_claims = serializers.ListField(child=serializers.CharField())
    refined = serializers.BooleanField()
    refusal_reason = serializers.ChoiceField(choices=REFUSAL_REASONS)
    sources = CitedSourceSerializer(many=True)
    passages = PassageSerializer(
        many=True,
        required=False,
        help_text="Only when refused: the closest passages found. They are not an answer.",
    )
    metadata = AnswerMetadataSerializer()


class ErrorPayload(serializers.Serializer):
    message = serializers.CharField()


class DonePayload(serializers.Serializer):
    status = serializers.ChoiceField(choices=FINAL_STATUSES)


# One payload schema per kind, and the event schemas are built from it; a kind missing here would
# be missing from /api/schema/, so tests/ragapp/trace/test_kinds.py checks it covers EventKind.
PAYLOADS: dict[EventKind, type[serializers.Serializer]] = {
    EventKind.REUSE: ReusePayload,
    EventKind.CONDENSE: CondensePayload,
    EventKind.RETRIEVE: RetrievePayload,
    EventKind.GRADE: GradePayload,
    EventKind.GRADE_DOCS: GradeDocsPayload,
    EventKind.BROADEN: BroadenPayload,
    EventKind.GENERATE: GeneratePayload,
    EventKind.GRADE_ANSWER: GradeAnswerPayload,
    EventKind.REFINE: RefinePayload,
    EventKind.ANSWER: AnswerPayload,
    EventKind.ERROR: ErrorPayload,
    EventKind.DONE: DonePayload,
}


def _event_serializer(kind: EventKind, payload: type[serializers.Serializer]):
    """The envelope every event shares, with the payload of one kind."""
    name = "".join(part.title() for part in kind.value.split("_"))
    fields = {
        "seq": serializers.IntegerField(min_value=1, help_text="1, 2, 3 ... within the run."),
        "kind": serializers.ChoiceField(choices=[kind.value]),
        "node": serializers.CharField(allow_blank=True, help_text="The graph node, if any."),
        "payload": payload(),
        "created_at": serializers.DateTimeField(),
        "duration_ms": serializers.FloatField(allow_null=True),
        "Meta": type("Meta", (), {"ref_name": f"{name}Event"}),
    }
    return type(f"{name}EventSerializer", (serializers.Serializer,), fields)


EVENT_SERIALIZERS = {kind.value: _event_serializer(kind, p) for kind, p in PAYLOADS.items()}

TraceEventSchema = PolymorphicProxySerializer(
    component_name="TraceEvent",
    serializers=EVENT_SERIALIZERS,
    resource_type_field_name="kind",
)
TraceEventListSchema = PolymorphicProxySerializer(
    component_name="TraceEvent",
    serializers=EVENT_SERIALIZERS,
    resource_type_field_name="kind",
    many=True,
)

# One SSE event as OpenAPI 3.2 describes a `text/event-stream` item ({event, id, data}), which
# tools for 3.1 read the same way: `data` is a TraceEvent as JSON, except on the library's
# `stream-open` and `keep-alive` events, which carry nothing.
SSE_EVENT_SCHEMA = {
    "oneOf": [
        {
            "type": "object",
            "required": ["event", "id", "data"],
            "properties": {
                "event": {"type": "string", "enum": [kind.value for kind in EventKind]},
                "id": {"type": "string", "description": "`run-<run id>:<seq>`"},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": "#/components/schemas/TraceEvent"},
                },
            },
        },
        {
            "type": "object",
            "required": ["event"],
            "properties": {
                "event": {"type": "string", "enum": ["stream-open", "keep-alive"]},
                "data": {"type": "string", "maxLength": 0},
            },
        },
    ]
}

SSE_DESCRIPTION = (
    "A Server-Sent Events stream. Each event is `event: <kind>`, `id: run-<run id>:<seq>` and one "
    "`data:` line holding the event as JSON (the `TraceEvent` schema). Kinds, in the order a run "
    "usually emits them: " + ", ".join(f"`{kind.value}`" for kind in EventKind) + ". The stream "
    "starts with an empty `stream-open` event, sends `keep-alive` every 20 s while idle, and "
    "ends after `done`. Reconnect with `Last-Event-ID` to resume after the last event received."
)
