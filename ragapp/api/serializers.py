"""Request and response shapes of the JSON API. Validation defers to the services."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from rest_framework import serializers

from ragapp.api.event_schemas import CitedSourceSerializer, PassageSerializer
from ragapp.models import Feedback, QueryRun, Thread
from ragapp.selectors import run_visible_to
from ragapp.services.runs import clean_query
from ragapp.trace.redaction import error_for


class QuerySerializer(serializers.Serializer):
    """A question to answer."""

    query = serializers.CharField(
        trim_whitespace=False,  # stored verbatim; clean_query rejects what is empty or too long
        allow_blank=True,  # so an empty query gets the same message as in the portal
        help_text="The question, up to RAG_MAX_QUERY_CHARS characters (4,000 by default).",
    )
    thread = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**63 - 1,  # a bigint: a larger id is a 400, not a database error
        help_text="Continue this thread of yours (its id); without it the run starts a new one.",
    )
    fresh = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: run the graph even if an earlier verified answer to the same question "
        "could be reused (RAG_REUSE).",
    )

    def to_internal_value(self, data):
        if isinstance(data, dict) and "query" in data and not isinstance(data["query"], str):
            # CharField would quietly turn 42 or true into text.
            raise serializers.ValidationError({"query": ["The query must be text."]})
        return super().to_internal_value(data)

    def validate_query(self, value: str) -> str:
        try:
            return clean_query(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


def _run_urls(run: QueryRun, request) -> dict:
    def url(name: str) -> str:
        path = reverse(name, args=[run.pk])
        return request.build_absolute_uri(path) if request is not None else path

    def thread_url() -> str:
        path = reverse("api-thread-detail", args=[run.thread_id])
        return request.build_absolute_uri(path) if request is not None else path

    return {
        "run": url("api-run-detail"),
        "events": url("api-run-events"),
        "page": url("run-detail"),
        "thread": thread_url(),
    }


class RunUrlsSerializer(serializers.Serializer):
    run = serializers.URLField(help_text="This run, as JSON.")
    events = serializers.URLField(
        help_text="Its trace: JSON, or live with Accept: text/event-stream."
    )
    page = serializers.URLField(help_text="Its page in the portal.")
    thread = serializers.URLField(help_text="The thread it is part of, as JSON.")


class RunCreatedSerializer(serializers.Serializer):
    """What POST /api/rag answers when it does not stream."""

    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=QueryRun.Status.choices)
    thread = serializers.IntegerField(help_text="The thread the run started or continued.")
    urls = RunUrlsSerializer()

    def to_representation(self, run):
        return {
            "id": run.pk,
            "status": run.status,
            "thread": run.thread_id,
            "urls": _run_urls(run, self.context["request"]),
        }


class RunSerializer(serializers.ModelSerializer):
    """A run as listed: the question, its outcome and when."""

    owner = serializers.CharField(source="owner.get_username", read_only=True, allow_null=True)
    hallucination_risk = serializers.ChoiceField(
        choices=QueryRun.Risk.choices, allow_blank=True, read_only=True
    )
    urls = serializers.SerializerMethodField()

    class Meta:
        model = QueryRun
        fields = [
            "id",
            "owner",
            "thread",
            "query",
            "status",
            "faithfulness_score",
            "hallucination_risk",
            "iteration_count",
            "correction_count",
            "created_at",
            "started_at",
            "finished_at",
            "urls",
        ]
        read_only_fields = fields

    def get_urls(self, run) -> RunUrlsSerializer:
        return _run_urls(run, self.context.get("request"))


# Stored with the run for audit, never served: the draft a refusal did not show.
WITHHELD = frozenset({"draft_answer", "first_draft_answer"})


class AnsweredEarlierSerializer(serializers.Serializer):
    """The earlier run whose verified answer a reused run gives."""

    run = serializers.UUIDField(help_text="The original run (never a reuse of it).")
    same_owner = serializers.BooleanField(help_text="Whether the same user asked it.")
    url = serializers.URLField(
        allow_null=True, help_text="That run, as JSON; null when you may not see it."
    )
    match = serializers.ChoiceField(choices=["exact", "near"])
    similarity = serializers.FloatField()
    index_version = serializers.IntegerField()


class RunDetailSerializer(RunSerializer):
    """A run with its answer, verdict, sources, error and metadata."""

    sources = serializers.SerializerMethodField()
    refusal_reason = serializers.SerializerMethodField()
    passages = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    standalone_question = serializers.SerializerMethodField()
    answered_earlier = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
            "answered_earlier",
            "standalone_question",
            *("answer", "refusal_reason", "sources", "passages", "error", "metadata"),
        ]
        read_only_fields = fields

    def get_sources(self, run) -> CitedSourceSerializer(many=True):
        return self._public((run.response_metadata or {}).get("sources", []))

    def _public(self, items: list[dict]) -> list[dict]:
        """Items whose source_path is an absolute server path (runs from before ingest roots
        were recorded) show only the file's name to anyone but staff."""
        user = getattr(self.context.get("request"), "user", None)
        if getattr(user, "is_staff", False):
            return items
        return [
            {**item, "source_path": item["source_path"].rsplit("/", 1)[-1]}
            if str(item.get("source_path", "")).startswith("/")
            else item
            for item in items
        ]

    def get_answered_earlier(self, run) -> AnsweredEarlierSerializer(allow_null=True):
        """For a reused answer, the run it comes from; null for a run that ran the graph."""
        if run.reused_from_id is None:
            return None
        request = self.context.get("request")
        user = getattr(request, "user", None)
        url = None
        if run_visible_to(user=user, run_id=run.reused_from_id):
            path = reverse("api-run-detail", args=[run.reused_from_id])
            url = request.build_absolute_uri(path) if request is not None else path
        reuse = (run.response_metadata or {}).get("reuse", {})
        return {
            "run": run.reused_from_id,
            "same_owner": run.reused_from.owner_id == run.owner_id,
            "url": url,
            "match": reuse.get("match", "exact"),
            "similarity": reuse.get("similarity", 1.0),
            "index_version": reuse.get("index_version", run.kb_version or 0),
        }

    def get_standalone_question(self, run) -> str:
        """For a follow-up, the question `condense` made of it and its thread, which was what got
        answered; empty for a first question."""
        return (run.response_metadata or {}).get("standalone_question", "")

    def get_refusal_reason(self, run) -> str:
        return (run.response_metadata or {}).get("refusal_reason", "")

    def get_error(self, run) -> str:
        """Why the run failed: whole for staff; others do not see server addresses or paths."""
        return error_for(getattr(self.context.get("request"), "user", None), run.error)

    def get_metadata(self, run) -> dict:
        """The response metadata, less the draft a refusal withheld.

        The portal never shows a refused run's unfaithful draft, so neither does the API, to
        anyone: staff read it in the admin, with the rest of the run's audit record.
        """
        return {k: v for k, v in (run.response_metadata or {}).items() if k not in WITHHELD}

    def get_passages(self, run) -> PassageSerializer(many=True):
        """When refused: the closest passages the search found, labelled as not an answer."""
        return self._public((run.response_metadata or {}).get("passages", []))


class ThreadUrlsSerializer(serializers.Serializer):
    thread = serializers.URLField(help_text="This thread, as JSON, with its runs.")
    page = serializers.URLField(help_text="Its page in the portal.")


class ThreadSerializer(serializers.ModelSerializer):
    """A thread as listed: its title (the first question), how many runs, the latest outcome."""

    owner = serializers.CharField(source="owner.get_username", read_only=True, allow_null=True)
    run_count = serializers.IntegerField(read_only=True, help_text="Runs asked in it.")
    latest_status = serializers.ChoiceField(
        choices=QueryRun.Status.choices, read_only=True, help_text="Its latest run's status."
    )
    urls = serializers.SerializerMethodField()

    class Meta:
        model = Thread
        fields = ["id", "owner", "title", "run_count", "latest_status", "created_at", "updated_at"]
        fields += ["urls"]
        read_only_fields = fields

    def get_urls(self, thread) -> ThreadUrlsSerializer:
        request = self.context.get("request")

        def url(name: str) -> str:
            path = reverse(name, args=[thread.pk])
            return request.build_absolute_uri(path) if request is not None else path

        return {"thread": url("api-thread-detail"), "page": url("thread-detail")}


class ThreadDetailSerializer(ThreadSerializer):
    """A thread with its runs, in the order they were asked."""

    runs = RunSerializer(many=True, read_only=True, source="ordered_runs")

    class Meta(ThreadSerializer.Meta):
        fields = [*ThreadSerializer.Meta.fields, "runs"]
        read_only_fields = fields


class RunFilterSerializer(serializers.Serializer):
    """Query parameters of GET /api/runs (the same filters as the history page)."""

    q = serializers.CharField(
        required=False, max_length=200, help_text="Text in the question or the answer."
    )
    status = serializers.ChoiceField(required=False, choices=QueryRun.Status.choices)
    risk = serializers.ChoiceField(required=False, choices=QueryRun.Risk.choices)
    since = serializers.DateField(required=False, help_text="Created on or after (YYYY-MM-DD).")
    until = serializers.DateField(required=False, help_text="Created on or before (YYYY-MM-DD).")

    def validate(self, attrs):
        if attrs.get("since") and attrs.get("until") and attrs["since"] > attrs["until"]:
            raise serializers.ValidationError({"until": ["Must not be before since."]})
        return attrs


class EventsQuerySerializer(serializers.Serializer):
    """Query parameters of GET /api/runs/{id}/events."""

    after = serializers.IntegerField(
        required=False, default=0, min_value=0, help_text="Only events with a greater seq."
    )


class FeedbackSerializer(serializers.ModelSerializer):
    """Thumbs up (1) or down (-1), with an optional comment."""

    rating = serializers.ChoiceField(choices=Feedback.Rating.choices)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")

    class Meta:
        model = Feedback
        fields = ["rating", "comment", "created_at"]
        read_only_fields = ["created_at"]
