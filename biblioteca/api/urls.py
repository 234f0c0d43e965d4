from django.urls import path

from biblioteca.api.views import SearchView

urlpatterns = [path("search", SearchView.as_view(), name="search")]
