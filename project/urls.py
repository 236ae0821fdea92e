"""URLs of the demo project: the admin is the operator surface."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
