"""URL configuration."""

from django.contrib import admin
from django.urls import include, path

from ragapp import gaps_views, sign_in_throttle, views
from ragapp.observability.views import metrics_view

# Password checks are throttled (ragapp/sign_in_throttle.py); the admin's is through its form.
admin.site.login_form = sign_in_throttle.AdminSignInForm

urlpatterns = [
    path("", views.ask, name="ask"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/answer/", views.run_answer, name="run-answer"),
    path("runs/<uuid:run_id>/replay/", views.run_replay, name="run-replay"),
    path("runs/<uuid:run_id>/feedback/", views.run_feedback, name="run-feedback"),
    path("history/", views.history, name="history"),
    path("threads/<int:thread_id>/", views.thread_detail, name="thread-detail"),
    path("threads/<int:thread_id>/replay/", views.thread_replay, name="thread-replay"),
    path("threads/<int:thread_id>/ask/", views.thread_ask, name="thread-ask"),
    path("chunks/<int:chunk_id>/", views.chunk_detail, name="chunk-detail"),
    path("gaps/", gaps_views.gaps_page, name="gaps"),
    path("gaps/golden.jsonl", gaps_views.gaps_export, name="gaps-export"),
    # Before the auth and admin routes for the same paths: these count failed password checks
    # and answer 429 while a client is blocked.
    path("accounts/login/", sign_in_throttle.portal_login, name="login"),
    path("accounts/password_change/", sign_in_throttle.password_change, name="password_change"),
    path("admin/login/", sign_in_throttle.admin_login),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("ragapp.api.urls")),
    path("healthz", views.healthz, name="healthz"),
    # Prometheus, for a scraper named by RAG_METRICS_TOKEN or RAG_METRICS_ALLOWED_NETWORKS.
    path("metrics", metrics_view, name="metrics"),
    # The live trace of one run (SSE): only its owner or staff get in.
    path("runs/<uuid:run_id>/events/", views.run_events, name="run-events"),
]
