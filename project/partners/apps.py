from django.apps import AppConfig


class PartnersConfig(AppConfig):
    name = "project.partners"
    label = "partners"
    verbose_name = "Partner (webhook receiver)"
