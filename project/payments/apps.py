from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "project.payments"
    label = "payments"
    verbose_name = "Payments"
