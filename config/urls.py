from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("biblioteca.api.urls")),
    path("api/v1/", include("oraculo.api.urls")),
    path("api/v1/", include("oraculo.evaluation.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("", include("oraculo.mcp.urls")),
    path("", include("oraculo.urls")),
]

handler400 = "config.http_edge.bad_request"
handler404 = "config.http_edge.not_found"
