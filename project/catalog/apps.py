from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "project.catalog"
    label = "catalog"
    verbose_name = "Vendor catalog"
