"""The knowledge base (documents, chunks, the embedding index) and the runs with their traces."""

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import VectorField

THREAD_TITLE_CHARS = 200


class IngestRoot(models.Model):
    """A directory given to `ingest_docs`, and the URL where it is published (if any)."""

    path = models.CharField(
        max_length=1024, unique=True, help_text="Keyed as ingest_docs keys documents."
    )
    base_url = models.URLField(max_length=2000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]

    def __str__(self) -> str:
        return f"{self.path} -> {self.base_url}" if self.base_url else self.path


class Document(models.Model):
    """One ingested source file."""

    class Format(models.TextChoices):
        MARKDOWN = "markdown", "Markdown"
        MDX = "mdx", "MDX"
        RST = "rst", "reStructuredText"
        ASCIIDOC = "asciidoc", "AsciiDoc"
        HTML = "html", "HTML"
        TEXT = "text", "Plain text"
        PDF = "pdf", "PDF"
        DOCX = "docx", "Word (DOCX)"

    source_path = models.CharField(max_length=1024, unique=True)
    root = models.ForeignKey(
        IngestRoot, on_delete=models.SET_NULL, related_name="documents", null=True, blank=True
    )
    # What users see instead of source_path, which may be an absolute server path.
    relative_path = models.CharField(
        max_length=1024, blank=True, help_text="The path relative to its ingest root."
    )
    url = models.URLField(
        max_length=2000, blank=True, help_text="Where the page is published (no anchor)."
    )
    title = models.CharField(max_length=500)
    format = models.CharField(max_length=16, choices=Format.choices)
    content_hash = models.CharField(max_length=64, help_text="sha256 of the normalised text")
    size_bytes = models.PositiveBigIntegerField()
    metadata = models.JSONField(default=dict, blank=True)
    ingested_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["source_path"]

    def __str__(self) -> str:
        return self.title or self.source_path

    @property
    def public_path(self) -> str:
        """The path anyone may see: relative to the ingest root, never an absolute server path."""
        if self.relative_path:
            return self.relative_path
        if not self.source_path.startswith("/"):
            return self.source_path
        return self.source_path.rsplit("/", 1)[-1]


class Chunk(models.Model):
    """A retrievable piece of a document, with its embedding and full-text vector."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    heading_path = models.CharField(max_length=1000, blank=True)
    has_code = models.BooleanField(default=False)
    # No fixed dimension on the column: the HNSW index is built on a cast to the dimension of
    # the embedding model in use (see EmbeddingIndex), so switching models needs no migration.
    embedding = VectorField()
    # Maintained by PostgreSQL itself, so the full-text index can never drift from the text.
    search_vector = models.GeneratedField(
        expression=SearchVector("heading_path", config="english", weight="A")
        + SearchVector("text", config="english", weight="B"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_unique_ordinal"),
        ]
        indexes = [GinIndex(fields=["search_vector"], name="chunk_search_vector_gin")]

    def __str__(self) -> str:
        return f"{self.document} #{self.ordinal}"

    @property
    def public_url(self) -> str:
        """The published page of this chunk with its anchor or page; "" when not published."""
        base = self.document.url
        if not base:
            return ""
        # Both are set at ingest: `page` for PDFs, `anchor` for a section heading.
        if page := self.metadata.get("page"):
            return f"{base}#page={page}"
        if anchor := self.metadata.get("anchor"):
            return f"{base}#{anchor}"
        return base


class EmbeddingIndex(models.Model):
    """Which embedding model the stored vectors came from; there is at most one row."""

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    # The knowledge base's version: every change to what runs can retrieve (an ingest that stores,
    # moves or prunes a document, a re-embed) adds one. Runs record it; an answer is reused only
    # while it is unchanged (ragapp/runs/reuse.py).
    version = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "embedding index"

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} ({self.dimensions} dims)"


class Evaluation(models.Model):
    """One run of `manage.py eval_rag`: a golden set put to the assistant, and its report."""

    class Mode(models.TextChoices):
        FULL = "full", "Full graph"
        RETRIEVAL = "retrieval", "Retrieval only"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    golden_path = models.CharField(max_length=1024)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    questions = models.PositiveIntegerField(default=0)
    settings = models.JSONField(default=dict, blank=True, help_text="The settings evaluated.")
    report = models.JSONField(default=dict, blank=True, help_text="Aggregate metrics.")
    # What `eval_rag --resume` needs to ask the same questions again: {"k": 5, "ids": [...]}, the
    # golden ids in the order they are asked (after --limit and --sample).
    selection = models.JSONField(
        default=dict, blank=True, help_text="recall@k's k and the golden ids asked, in order."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_mode_display()})"


class Thread(models.Model):
    """A conversation: a first question and its follow-ups, each one run, in order."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads", null=True
    )
    title = models.CharField(max_length=THREAD_TITLE_CHARS)  # from the first question
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Moved forward by every new run, so History lists the threads last asked in first.
    updated_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="thread_owner_updated")]

    def __str__(self) -> str:
        return self.title


class QueryRun(models.Model):
    """One question run through the graph, with its outcome."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        ANSWERED = "answered", "Answered"
        REFUSED = "refused", "Refused"
        FAILED = "failed", "Failed"

    class Risk(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="query_runs", null=True
    )
    # Every run belongs to one thread; a first question starts its own.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    query = models.TextField()
    # sha256 of the normalised query (services/gaps.py question_hash): how reuse finds repeats.
    query_hash = models.CharField(max_length=64, blank=True, db_index=True)
    # The knowledge base's version (EmbeddingIndex.version) the run was asked at; null before 0008.
    kb_version = models.PositiveBigIntegerField(null=True, blank=True)
    # Set when the answer is an earlier run's, reused (ragapp/runs/reuse.py): always the original.
    reused_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, related_name="reuses", null=True, blank=True
    )
    # Set on the runs `manage.py eval_rag` makes; they are stored and audited like any other.
    evaluation = models.ForeignKey(
        Evaluation, on_delete=models.SET_NULL, related_name="runs", null=True, blank=True
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    answer = models.TextField(blank=True)
    faithfulness_score = models.FloatField(null=True, blank=True)
    hallucination_risk = models.CharField(max_length=8, choices=Risk.choices, blank=True)
    iteration_count = models.PositiveSmallIntegerField(default=0)
    correction_count = models.PositiveSmallIntegerField(default=0)
    response_metadata = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Refreshed every RAG_RUN_HEARTBEAT_SECONDS by the process executing the run; a running run
    # whose heartbeat stops lost that process (ragapp/runs/liveness.py).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="run_owner_created"),
            # The liveness check looks for unfinished runs only: keep that index small.
            models.Index(
                fields=["status"],
                name="run_unfinished",
                condition=models.Q(status__in=["queued", "running"]),
            ),
        ]

    def __str__(self) -> str:
        return self.query[:80]


class TraceEvent(models.Model):
    """One step of a run's reasoning trace: the source of the live stream and of replay."""

    run = models.ForeignKey(QueryRun, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32)
    node = models.CharField(max_length=32, blank=True)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    duration_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="event_unique_seq")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.kind}"


class Feedback(models.Model):
    """A user's thumbs up or down on a finished run."""

    class Rating(models.IntegerChoices):
        DOWN = -1, "Thumbs down"
        UP = 1, "Thumbs up"

    run = models.ForeignKey(QueryRun, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    rating = models.SmallIntegerField(choices=Rating.choices)
    comment = models.TextField(blank=True, max_length=2000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "feedback"
        constraints = [
            models.UniqueConstraint(fields=["run", "user"], name="feedback_one_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on {self.run_id}"


class QuestionVector(models.Model):
    """A question's embedding, kept so the gaps page can group thousands of runs quickly.

    Keyed by the question's normalised text and the model, so a question asked a hundred times is
    embedded once, and a change of embedding model never mixes vectors of two models.
    """

    text_hash = models.CharField(max_length=64, help_text="sha256 of the normalised question")
    model = models.CharField(max_length=240, help_text="provider/model that made the vector")
    embedding = VectorField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "text_hash"], name="question_vector_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.model} {self.text_hash[:12]}"
