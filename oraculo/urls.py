from django.urls import path

from oraculo import views

urlpatterns = [
    path("", views.demo, name="demo"),
    path("widget/demo/", views.demo, name="widget-demo"),
]
