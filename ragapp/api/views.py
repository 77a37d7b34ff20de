"""API views. Thin: validate, call a service or selector, serialize."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework import generics, serializers, status
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ragapp.api.event_schemas import SSE_DESCRIPTION, SSE_EVENT_SCHEMA, TraceEventListSchema
from ragapp.api.http import SseCapableMixin
from ragapp.api.serializers import (
    EventsQuerySerializer,
    FeedbackSerializer,
    QuerySerializer,
    RunCreatedSerializer,
    RunDetailSerializer,
    RunFilterSerializer,
    RunSerializer,
    ThreadDetailSerializer,
    ThreadSerializer,
)
from ragapp.api.throttles import RunCreationThrottle, TokenObtainThrottle
from ragapp.models import QueryRun
from ragapp.runs.submit import RunLimitReached, run_submit
from ragapp.selectors import (
    run_events_list,
    run_trace_complete,
    runs_search,
    runs_visible_to,
    system_health,
    threads_owned_by,
    threads_search,
)
from ragapp.services import feedback_submit
from ragapp.sign_in_throttle import SignInAttempt
from ragapp.trace.stream import event_message, follow_run, run_event_stream

ERRORS = {
    401: OpenApiResponse(description="No or invalid credentials (`WWW-Authenticate: Token`)."),
    403: OpenApiResponse(description="Session auth without a valid CSRF token."),
    404: OpenApiResponse(description="No such run, or not yours (staff see every run)."),
}
THREAD_404 = OpenApiResponse(description="No such thread, or not yours (staff see every thread).")
SSE_RESPONSE = OpenApiResponse(response=SSE_EVENT_SCHEMA, description=SSE_DESCRIPTION)


def _visible_run(request, run_id):
    # Another user's run is a 404, exactly like a run that does not exist.
    return get_object_or_404(runs_visible_to(user=request.user), pk=run_id)


class RagView(SseCapableMixin, APIView):
    """`GET`: health (its detail for users only). `POST`: ask a question (202, or SSE)."""

    def get_permissions(self):
        return [AllowAny()] if self.request.method == "GET" else [IsAuthenticated()]

    def get_throttles(self):
        return [RunCreationThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        operation_id="health",
        summary="Health: database, knowledge base and models (no key or model needed)",
        description=(
            "Anyone gets `status` (`ok`, `degraded` or `error`). Signed-in and token users also "
            "get the detail: `database`, `index`, `providers` and `models_ready`."
        ),
        responses={
            200: OpenApiTypes.OBJECT,
            503: OpenApiResponse(OpenApiTypes.OBJECT, description="The database does not answer."),
        },
    )
    def get(self, request):
        health = system_health()
        code = status.HTTP_503_SERVICE_UNAVAILABLE if health["status"] == "error" else 200
        if not request.user.is_authenticated:
            # Model names, provider settings, index size and database errors map the deployment
            # for an attacker; a load balancer or uptime monitor needs only the status.
            health = {"status": health["status"]}
        return Response(health, status=code)

    @extend_schema(
        operation_id="ask",
        summary="Ask a question: the run starts at once",
        request=QuerySerializer,
        responses={
            (202, "application/json"): RunCreatedSerializer,
            (200, "text/event-stream"): SSE_RESPONSE,
            400: OpenApiResponse(description="Empty, too long or not text (field messages)."),
            413: OpenApiResponse(description="The body is over DATA_UPLOAD_MAX_MEMORY_SIZE."),
            429: OpenApiResponse(
                description="Too many runs (RAG_API_RUN_RATE), too many of yours still active "
                "(RAG_MAX_ACTIVE_RUNS_PER_USER), or the queue is full (RAG_MAX_QUEUED_RUNS); "
                "see Retry-After."
            ),
            404: OpenApiResponse(
                description="`thread` names no thread of yours (staff too may only continue "
                "their own)."
            ),
            **{k: v for k, v in ERRORS.items() if k != 404},
        },
        examples=[
            OpenApiExample("A question", value={"query": "How do I re-embed the docs?"}),
            OpenApiExample("A follow-up", value={"query": "And on Windows?", "thread": 42}),
            OpenApiExample(
                "A fresh answer, never reused",
                value={"query": "How do I re-embed the docs?", "fresh": True},
            ),
        ],
    )
    def post(self, request):
        query = QuerySerializer(data=request.data)
        query.is_valid(raise_exception=True)
        thread = None
        if "thread" in query.validated_data:
            # Someone else's thread is a 404, exactly like one that does not exist: staff may
            # read every thread, but a run is always its asker's.
            thread = get_object_or_404(
                threads_owned_by(user=request.user), pk=query.validated_data["thread"]
            )
        try:
            run = run_submit(
                query=query.validated_data["query"],
                owner=request.user,
                thread=thread,
                fresh=query.validated_data["fresh"],
            )
        except RunLimitReached as exc:
            raise Throttled(wait=exc.retry_after, detail=str(exc)) from exc
        if self.wants_stream(request):
            return run_event_stream(request._request, run.pk, after=0, close_on_done=True)
        body = RunCreatedSerializer(run, context={"request": request}).data
        return Response(body, status=202, headers={"Location": body["urls"]["run"]})


class RunPagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 100

    def get_page_size(self, request):
        self.page_size = settings.RAG_API_PAGE_SIZE
        return super().get_page_size(request)


@extend_schema_view(
    get=extend_schema(
        operation_id="runs_list",
        summary="Your runs (everyone's for staff), newest first",
        parameters=[RunFilterSerializer],
        responses={
            200: RunSerializer(many=True),
            400: OpenApiResponse(description="A filter is not valid (field messages)."),
            401: ERRORS[401],
            404: OpenApiResponse(description="No such page."),
        },
    )
)
class RunListView(generics.ListAPIView):
    serializer_class = RunSerializer
    pagination_class = RunPagination

    def get_queryset(self):
        filters = RunFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return runs_search(user=self.request.user, **filters.validated_data)


@extend_schema_view(
    get=extend_schema(
        operation_id="runs_retrieve",
        summary="One run: answer, verdict, sources and metadata",
        responses={200: RunDetailSerializer, **ERRORS},
    )
)
class RunDetailView(generics.RetrieveAPIView):
    serializer_class = RunDetailSerializer
    lookup_url_kwarg = "run_id"

    def get_queryset(self):
        return runs_visible_to(user=self.request.user).select_related("owner")


def _threads(request):
    """The threads the caller may see, with what ThreadSerializer shows."""
    return threads_search(user=request.user).prefetch_related(
        Prefetch(
            "runs",
            queryset=QueryRun.objects.select_related("owner").order_by("created_at"),
            to_attr="ordered_runs",
        )
    )


@extend_schema_view(
    get=extend_schema(
        operation_id="threads_list",
        summary="Your threads (everyone's for staff), last asked in first",
        parameters=[RunFilterSerializer],
        description="A thread is listed when one of its runs matches the filters.",
        responses={
            200: ThreadSerializer(many=True),
            400: OpenApiResponse(description="A filter is not valid (field messages)."),
            401: ERRORS[401],
            404: OpenApiResponse(description="No such page."),
        },
    )
)
class ThreadListView(generics.ListAPIView):
    serializer_class = ThreadSerializer
    pagination_class = RunPagination

    def get_queryset(self):
        filters = RunFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return threads_search(user=self.request.user, **filters.validated_data)


@extend_schema_view(
    get=extend_schema(
        operation_id="threads_retrieve",
        summary="One thread with its runs, in the order they were asked",
        responses={200: ThreadDetailSerializer, 401: ERRORS[401], 404: THREAD_404},
    )
)
class ThreadDetailView(generics.RetrieveAPIView):
    serializer_class = ThreadDetailSerializer
    lookup_url_kwarg = "thread_id"

    def get_queryset(self):
        return _threads(self.request)


class RunEventsView(SseCapableMixin, APIView):
    """A run's trace: stored events as JSON, or followed live as SSE."""

    @extend_schema(
        operation_id="runs_events",
        summary="A run's trace, resumable after a seq",
        parameters=[EventsQuerySerializer],
        responses={
            (200, "application/json"): inline_serializer(
                "RunEvents",
                {
                    "run": serializers.UUIDField(),
                    "status": serializers.CharField(),
                    "finished": serializers.BooleanField(
                        help_text="True once the run ended: its trace will not grow."
                    ),
                    "events": TraceEventListSchema,
                },
            ),
            (200, "text/event-stream"): SSE_RESPONSE,
            (204, "text/event-stream"): OpenApiResponse(
                description="The run has finished and every event was already received."
            ),
            400: OpenApiResponse(description="`after` is not a number >= 0."),
            **ERRORS,
        },
    )
    def get(self, request, run_id):
        run = _visible_run(request, run_id)
        params = EventsQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        after = params.validated_data["after"]
        if self.wants_stream(request):
            return follow_run(request._request, run, after=after)
        events = [event_message(event) for event in run_events_list(run=run, after=after)]
        finished = run_trace_complete(run)
        body = {"run": run.pk, "status": run.status, "finished": finished, "events": events}
        return Response(body)


class RunFeedbackView(APIView):
    @extend_schema(
        operation_id="runs_feedback",
        summary="Thumbs up (1) or down (-1) on a finished run; again to change it",
        request=FeedbackSerializer,
        responses={
            201: FeedbackSerializer,
            400: OpenApiResponse(description="Bad rating, or the run has not finished."),
            **ERRORS,
        },
    )
    def post(self, request, run_id):
        run = _visible_run(request, run_id)
        form = FeedbackSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            feedback = feedback_submit(run=run, user=request.user, **form.validated_data)
        except DjangoValidationError as exc:
            raise ValidationError({"detail": exc.messages}) from None
        return Response(FeedbackSerializer(feedback).data, status=201)


class CountedAuthTokenSerializer(AuthTokenSerializer):
    """The password check is a sign-in attempt, counted with the portal's and the admin's."""

    def validate(self, attrs):
        # Both fields are required, so reaching here means a password is about to be checked.
        attempt = SignInAttempt(self.context["request"], attrs["username"])
        refusal = attempt.refusal()
        if refusal:
            raise Throttled(wait=refusal.retry_after, detail=f"{refusal.reason}.")
        try:
            attrs = super().validate(attrs)
        except ValidationError:
            attempt.record(authenticated=False)
            raise
        attempt.record(authenticated=True)
        return attrs


@extend_schema_view(
    post=extend_schema(
        operation_id="token",
        summary="Exchange a username and password for your API token",
        request=AuthTokenSerializer,
        responses={
            200: inline_serializer("Token", {"token": serializers.CharField()}),
            400: OpenApiResponse(description="Wrong or missing username or password."),
            429: OpenApiResponse(
                description="Too many attempts from your address (RAG_API_TOKEN_RATE), or too "
                "many failed ones (RAG_LOGIN_FAILURES_PER_IP, RAG_LOGIN_FAILURES_PER_USERNAME); "
                "see Retry-After."
            ),
        },
        auth=[],
    )
)
class TokenView(ObtainAuthToken):
    """Exchange a username and password for the user's API token (created on first use)."""

    serializer_class = CountedAuthTokenSerializer
    # Attempts per address, right or wrong; failures are counted by the serializer. No limit per
    # username alone: guessing from elsewhere would lock the account's owner out.
    throttle_classes = [TokenObtainThrottle]


# The interactive API docs: drf-spectacular's pages, their assets from drf-spectacular-sidecar.
# For signed-in users, like the schema they read (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]); a
# browser that is not signed in goes to the sign-in page. Their scripts stay this site's files
# only, as everywhere (the Swagger page is the "split" one, which loads its start-up script from
# a URL instead of inlining it), but Swagger UI and Redoc style themselves with inline <style>,
# and Redoc runs its search in a worker made from a blob: URL: these pages allow those two.
# (Leave SPECTACULAR_SETTINGS["REDOC_UI_SETTINGS"] unset: with it, redoc.html inlines a script.)
API_DOCS_CSP = {
    **settings.SECURE_CSP,
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "worker-src": [CSP.SELF, "blob:"],
}
api_docs = login_required(
    csp_override(API_DOCS_CSP)(SpectacularSwaggerSplitView.as_view(url_name="api-schema"))
)
api_redoc = login_required(
    csp_override(API_DOCS_CSP)(SpectacularRedocView.as_view(url_name="api-schema"))
)
