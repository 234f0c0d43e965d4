from django.urls import path

from oraculo.api.views import AskView, HealthView, QueryFeedbackView

urlpatterns = [
    path("ask", AskView.as_view(), name="oraculo-ask"),
    path("queries/<int:query_id>/feedback", QueryFeedbackView.as_view(), name="oraculo-query-feedback"),
    path("health", HealthView.as_view(), name="oraculo-health"),
]
