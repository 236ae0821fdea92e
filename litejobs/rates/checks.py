"""System checks of rate limits (registered when litejobs' app is ready)."""

from collections.abc import Mapping, Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks

from ..conf import settings
from ..exceptions import LitejobsError
from ..jobs import catalog
from ..jobs.ratelimits import queue_rate


@checks.register("litejobs")
def check_queue_rates(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E090: ``QUEUE_RATES`` is not a dict of queue -> rate, or one rate is invalid
    (its jobs would refuse every enqueue); litejobs.W090: a job declares its own ``rate=`` in
    a queue with a rate (its own replaces the queue's for its runs)."""
    rates = settings.QUEUE_RATES
    if not isinstance(rates, Mapping):
        return [
            checks.Error(
                f"[settings-invalid] LITEJOBS['QUEUE_RATES'] must be a dict of queue name -> "
                f"rate; got {type(rates).__name__}.",
                hint="Write {'partners': {'limit': 100, 'per': '1m'}}.",
                id="litejobs.E090",
            )
        ]
    found: list[checks.CheckMessage] = []
    for queue in rates:
        try:
            queue_rate(queue)
        except LitejobsError as error:
            found.append(
                checks.Error(
                    f"[{error.code}] {error.args[0]}",
                    hint="Write {'limit': 100, 'per': '1m'} or litejobs.Rate(limit=100, per='1m').",
                    id="litejobs.E090",
                )
            )
    found += [
        checks.Warning(
            f"Job {definition.name!r} declares its own rate in queue {definition.queue!r}, "
            "which has a rate in LITEJOBS['QUEUE_RATES']: its runs follow its own rate and are "
            "not counted in the queue's.",
            hint="Declare the job in another queue, or drop its rate= to share the queue's.",
            obj=definition.name,
            id="litejobs.W090",
        )
        for definition in catalog.all_jobs()
        if getattr(definition, "rate", None) is not None and definition.queue in rates
    ]
    return found
