"""System checks of ingest pipelines (registered when litejobs' app is ready)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.core.files.storage import storages

from ..conf import settings
from ..exceptions import LitejobsError
from ..jobs.declarations import queue_name
from . import declarations

#: Check ids by the code of the rule a refused declaration broke; any other is E074.
CHECK_IDS = {
    "pipeline-reasons-missing": "litejobs.E070",
    "pipeline-step-unmarked": "litejobs.E071",
    "pipeline-reason-outside-set": "litejobs.E072",
    "pipeline-source-undeclared": "litejobs.E073",
}
HINTS = {
    "litejobs.E070": "Pass drop_reasons=YourReasonEnum, with a POISON = 'poison' member.",
    "litejobs.E071": "Mark each step @drop(reasons={...}) or @enrich(sources={...}).",
    "litejobs.E072": "Name only members of the pipeline's drop_reasons enum.",
    "litejobs.E073": "Add the source to the pipeline's sources= or drop it from @enrich.",
    "litejobs.E074": "Fix the pipeline declaration; only declared pipelines run.",
}


@checks.register("litejobs")
def check_pipelines(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E070 (a pipeline without a closed drop-reason set, or without its poison
    member), E071 (a step marked neither drop nor enrich), E072 (a drop step or the buffer
    naming a reason outside the set), E073 (an enrich step naming an undeclared source) and
    E074 (another invalid pipeline declaration), found while importing every app's
    ``pipelines.py``."""
    found = []
    for module, error in declarations.declaration_errors():
        code = getattr(error, "code", "pipeline-invalid")
        check_id = CHECK_IDS.get(code, "litejobs.E074")
        found.append(
            checks.Error(
                f"{module}: [{code}] {error.args[0]}",
                hint=HINTS[check_id],
                obj=module,
                id=check_id,
            )
        )
    return found


@checks.register("litejobs")
def check_pipeline_files(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E076 (``ingest-storage-unknown``): a pipeline's ``Files(storage=...)`` names
    no storage of ``STORAGES``, so none of its imports could start."""
    aliases = set(storages.backends)
    return [
        checks.Error(
            f"[ingest-storage-unknown] Pipeline {declared.name!r} imports its files from the "
            f"storage {declared.files.storage!r}, which STORAGES does not define.",
            hint=f"Name one of {', '.join(sorted(aliases)) or 'none'} in files=Files(storage=...), "
            "or add the storage to STORAGES.",
            obj=declared.module,
            id="litejobs.E076",
        )
        for declared in declarations.pipelines.all()
        if declared.files is not None and declared.files.storage not in aliases
    ]


@checks.register("litejobs")
def check_ingest_settings(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E075: ``INGEST_QUEUE`` is not a queue name (``settings-invalid``); the
    ingest jobs use the default, ``"ingest"``, meanwhile."""
    try:
        queue_name(settings.INGEST_QUEUE, what="LITEJOBS['INGEST_QUEUE']")
    except LitejobsError as error:
        return [
            checks.Error(
                f"[settings-invalid] {error.args[0]}",
                hint="Name the queue of the pipelines' drain and import jobs (the default is "
                "'ingest'); the workers that serve it run the pipelines.",
                id="litejobs.E075",
            )
        ]
    return []
