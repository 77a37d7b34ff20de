"""URL configuration."""

from django.contrib import admin
from django.urls import include, path

from ragapp import views

urlpatterns = [
    path("", views.ask, name="ask"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/answer/", views.run_answer, name="run-answer"),
    path("runs/<uuid:run_id>/replay/", views.run_replay, name="run-replay"),
    path("runs/<uuid:run_id>/feedback/", views.run_feedback, name="run-feedback"),
    path("history/", views.history, name="history"),
    path("chunks/<int:chunk_id>/", views.chunk_detail, name="chunk-detail"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("ragapp.api.urls")),
    path("healthz", views.healthz, name="healthz"),
    # The live trace of one run (SSE): only its owner or staff get in.
    path("runs/<uuid:run_id>/events/", views.run_events, name="run-events"),
]
