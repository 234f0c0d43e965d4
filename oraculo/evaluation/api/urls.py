from django.urls import path

from oraculo.evaluation.api.views import EvalRunCreateView, EvalRunDetailView

urlpatterns = [
    path("eval-runs", EvalRunCreateView.as_view(), name="eval-run-create"),
    path("eval-runs/<int:run_id>", EvalRunDetailView.as_view(), name="eval-run-detail"),
]
