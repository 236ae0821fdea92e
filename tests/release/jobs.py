"""One app's jobs in two releases: ``LITEJOBS_TEST_RELEASE=old`` or ``new`` picks which.

A worker process started with ``old`` plays a worker not yet deployed: it does not know
``release.added`` and knows ``release.shaped`` only at payload version 1. The test process
writes the rows a newer web process would, so it needs neither declaration.
"""

import os

from litejobs import job
from tests.testapp.models import Mark

RELEASE = os.environ.get("LITEJOBS_TEST_RELEASE", "old")

if RELEASE == "new":

    @job(name="release.added", key=lambda label: f"added:{label}")
    def added(ctx, label: str) -> None:
        """A job the new release adds."""
        Mark.objects.create(label=label, value=os.getpid())

    @job(
        name="release.shaped",
        key=lambda label: f"shaped:{label}",
        version=2,
        upgrade={1: lambda old: {"label": old["name"]}},  # version 2 renamed the argument
    )
    def shaped(ctx, label: str) -> None:
        Mark.objects.create(label=f"shaped:{label}", value=os.getpid())

else:

    @job(name="release.shaped", key=lambda name: f"shaped:{name}")
    def shaped(ctx, name: str) -> None:
        Mark.objects.create(label=f"shaped-old:{name}", value=os.getpid())
