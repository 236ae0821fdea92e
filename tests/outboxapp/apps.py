from django.apps import AppConfig


class OutboxAppConfig(AppConfig):
    name = "tests.outboxapp"
    label = "outboxapp"
