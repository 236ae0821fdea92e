"""A command that must never run: litejobs' runtimes shadow it whatever the app order."""

from django.core.management.base import BaseCommand, CommandError


class ShadowCommand(BaseCommand):
    help = "tests.shadowapp's command of the same name as a litejobs runtime."

    def handle(self, *args, **options):
        raise CommandError("tests.shadowapp's command ran", returncode=3)
