"""URLs of the JSON API, mounted at /api/."""

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from ragapp.api import views

urlpatterns = [
    path("rag", views.RagView.as_view(), name="api-rag"),
    path("runs", views.RunListView.as_view(), name="api-runs"),
    path("runs/<uuid:run_id>", views.RunDetailView.as_view(), name="api-run-detail"),
    path("runs/<uuid:run_id>/events", views.RunEventsView.as_view(), name="api-run-events"),
    path("runs/<uuid:run_id>/feedback", views.RunFeedbackView.as_view(), name="api-run-feedback"),
    path("token", views.TokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]
