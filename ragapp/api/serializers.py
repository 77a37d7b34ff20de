"""Request and response shapes of the JSON API. Validation defers to the services."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from rest_framework import serializers

from ragapp.api.event_schemas import CitedSourceSerializer, PassageSerializer
from ragapp.models import Feedback, QueryRun
from ragapp.services.runs import clean_query
from ragapp.trace.redaction import error_for


class QuerySerializer(serializers.Serializer):
    """A question to answer."""

    query = serializers.CharField(
        trim_whitespace=False,  # stored verbatim; clean_query rejects what is empty or too long
        allow_blank=True,  # so an empty query gets the same message as in the portal
        help_text="The question, up to RAG_MAX_QUERY_CHARS characters (4,000 by default).",
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

    return {
        "run": url("api-run-detail"),
        "events": url("api-run-events"),
        "page": url("run-detail"),
    }


class RunUrlsSerializer(serializers.Serializer):
    run = serializers.URLField(help_text="This run, as JSON.")
    events = serializers.URLField(
        help_text="Its trace: JSON, or live with Accept: text/event-stream."
    )
    page = serializers.URLField(help_text="Its page in the portal.")


class RunCreatedSerializer(serializers.Serializer):
    """What POST /api/rag answers when it does not stream."""

    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=QueryRun.Status.choices)
    urls = RunUrlsSerializer()

    def to_representation(self, run):
        return {"id": run.pk, "status": run.status, "urls": _run_urls(run, self.context["request"])}


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
WITHHELD = frozenset({"draft_answer"})


class RunDetailSerializer(RunSerializer):
    """A run with its answer, verdict, sources, error and metadata."""

    sources = serializers.SerializerMethodField()
    refusal_reason = serializers.SerializerMethodField()
    passages = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
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
