from django.urls import path

from oraculo.mcp.tools import server

urlpatterns = [path("mcp", server, name="mcp")]
