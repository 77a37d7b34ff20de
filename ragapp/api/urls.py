"""URLs of the JSON API, mounted at /api/."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from ragapp.api import views

urlpatterns = [
    path("rag", views.RagView.as_view(), name="api-rag"),
    path("runs", views.RunListView.as_view(), name="api-runs"),
    path("runs/<uuid:run_id>", views.RunDetailView.as_view(), name="api-run-detail"),
    path("runs/<uuid:run_id>/events", views.RunEventsView.as_view(), name="api-run-events"),
    path("runs/<uuid:run_id>/feedback", views.RunFeedbackView.as_view(), name="api-run-feedback"),
    path("threads", views.ThreadListView.as_view(), name="api-threads"),
    path("threads/<int:thread_id>", views.ThreadDetailView.as_view(), name="api-thread-detail"),
    path("token", views.TokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The interactive docs: for signed-in users, each with the CSP it needs and no inline script.
    path("docs/", views.api_docs, name="api-docs"),
    path("redoc/", views.api_redoc, name="api-redoc"),
]
