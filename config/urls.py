"""URL configuration."""

from django.contrib import admin
from django.urls import include, path

from ragapp import views

urlpatterns = [
    path("", views.ask, name="ask"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<uuid:run_id>/answer/", views.run_answer, name="run-answer"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    # The live trace of one run (SSE): only its owner or staff get in.
    path("runs/<uuid:run_id>/events/", views.run_events, name="run-events"),
]
