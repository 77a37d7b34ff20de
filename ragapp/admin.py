"""Admin for the knowledge base, the threads and runs with their read-only traces, and feedback."""

from django.contrib import admin
from django.db.models import Count
from django.template.response import TemplateResponse
from django.urls import path

from ragapp import gaps_views
from ragapp.gaps import REASONS, gaps_find
from ragapp.models import (
    Chunk,
    Document,
    EmbeddingIndex,
    Feedback,
    IngestRoot,
    QueryRun,
    Thread,
    TraceEvent,
)
from ragapp.trace.text import describe


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ("ordinal", "heading_path", "has_code", "text")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "source_path", "format", "url", "size_bytes", "updated_at")
    list_filter = ("format", "root", "updated_at")
    search_fields = ("title", "source_path", "url")
    readonly_fields = ("content_hash", "size_bytes", "ingested_at", "updated_at", "metadata")
    inlines = [ChunkInline]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ("document", "ordinal", "heading_path", "has_code")
    list_filter = ("has_code", "document__format")
    search_fields = ("text", "heading_path", "document__title", "document__source_path")
    list_select_related = ("document",)
    # The embedding is hundreds of floats: not something to read or edit in a form.
    exclude = ("embedding",)
    readonly_fields = ("document", "ordinal", "heading_path", "has_code", "text", "metadata")


@admin.register(IngestRoot)
class IngestRootAdmin(admin.ModelAdmin):
    list_display = ("path", "base_url", "updated_at")
    search_fields = ("path", "base_url")
    # Set by `ingest_docs --base-url`; editing it here would leave stored links behind.
    readonly_fields = ("path", "base_url", "created_at", "updated_at")

    def has_add_permission(self, request):
        return False


@admin.register(EmbeddingIndex)
class EmbeddingIndexAdmin(admin.ModelAdmin):
    list_display = ("provider", "model", "dimensions", "updated_at")
    readonly_fields = ("provider", "model", "dimensions", "created_at", "updated_at")

    def has_add_permission(self, request):
        return False


class TraceEventInline(admin.TabularInline):
    model = TraceEvent
    fields = ("seq", "kind", "node", "description", "payload", "duration_ms", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("seq",)

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="what happened")
    def description(self, event):
        return describe(event.kind, event.payload)


class FeedbackInline(admin.TabularInline):
    model = Feedback
    fields = ("user", "rating", "comment", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class ThreadRunInline(admin.TabularInline):
    """A thread's runs, in the order they were asked, each linked to its own page."""

    model = QueryRun
    fields = ("query", "status", "hallucination_risk", "created_at")
    readonly_fields = fields
    ordering = ("created_at",)
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ("title", "owner", "run_count", "created_at", "updated_at")
    list_filter = ("updated_at",)
    search_fields = ("title", "owner__username", "runs__query")
    date_hierarchy = "updated_at"
    list_select_related = ("owner",)
    # Written by the runs that start and continue it; an audit record like them.
    readonly_fields = ("title", "owner", "created_at", "updated_at")
    inlines = [ThreadRunInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(number_of_runs=Count("runs"))

    @admin.display(description="runs", ordering="number_of_runs")
    def run_count(self, thread):
        return thread.number_of_runs

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(QueryRun)
class QueryRunAdmin(admin.ModelAdmin):
    list_display = (
        "query",
        "owner",
        "thread",
        "status",
        "faithfulness_score",
        "hallucination_risk",
        "created_at",
    )
    list_filter = ("status", "hallucination_risk", "created_at")
    search_fields = ("query", "answer", "owner__username", "id")
    date_hierarchy = "created_at"
    list_select_related = ("owner", "thread")
    # Runs are an audit record: the graph writes them, nobody edits them.
    readonly_fields = [f.name for f in QueryRun._meta.fields]
    inlines = [TraceEventInline, FeedbackInline]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_urls(self):
        gaps = path("gaps/", self.admin_site.admin_view(self.gaps_view), name="ragapp_gaps")
        return [gaps, *super().get_urls()]

    def gaps_view(self, request):
        """The gaps page's groups, in the admin: the same filters, the same export."""
        form, filters = gaps_views.filters_from(request)
        model_id, rows = gaps_views.prepared(filters)
        context = {
            **self.admin_site.each_context(request),
            "title": "Gaps",
            "form": form,
            "gaps": gaps_find(model_id=model_id, rows=rows, **filters),
            "query": request.GET.urlencode(),
            "reasons": REASONS,
        }
        return TemplateResponse(request, "admin/ragapp/gaps.html", context)


@admin.register(Feedback)
class FeedbackAdmin(admin.ModelAdmin):
    list_display = ("run", "user", "rating", "created_at")
    list_filter = ("rating", "created_at")
    search_fields = ("comment", "run__query", "user__username")
    list_select_related = ("run", "user")
    readonly_fields = ("run", "user", "rating", "comment", "created_at")

    def has_add_permission(self, request):
        return False
