"""A module of an installed app that Django's startup never imports: its job is found by a
worker through the module path its rows record."""

from litejobs import job

from .models import Mark


@job(key=lambda label: f"service:{label}", timeout="10s")
def from_services(ctx, label: str) -> None:
    Mark.objects.create(label=label)
