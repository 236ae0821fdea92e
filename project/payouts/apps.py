from django.apps import AppConfig


class PayoutsConfig(AppConfig):
    name = "project.payouts"
    label = "payouts"
    verbose_name = "Payouts"
