"""URL configuration."""

from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

from ragapp import views

urlpatterns = [
    # Until the portal exists, the admin is the product's front door.
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    path("healthz", views.healthz, name="healthz"),
    # The live trace of one run (SSE): only its owner or staff get in.
    path("runs/<uuid:run_id>/events/", views.run_events, name="run-events"),
]
