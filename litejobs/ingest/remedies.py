"""The dashboard's words and actions for ingest pipelines' problems (``Feature.words``),
each with a link to the pipeline's page."""

from __future__ import annotations

from ..core.remedies import Words, linked


def _pipeline(says: str) -> Words:
    return linked(says, "Open the pipeline", "view_ingestcount", "ingestcount_pipeline")


#: The dashboard's words for each code of the pipelines' problems.
WORDS: dict[str, Words] = {
    "ingest-backlog": _pipeline(
        "Pipeline {where}: {count} records wait in its buffer longer than its freshness "
        "allows. Check that a worker serves the ingest queue and that the pipeline's drain job "
        "is not failing."
    ),
    "ingest-over-capacity": _pipeline(
        "Pipeline {where}: {count} records buffered, over its capacity. Run more workers for "
        "the ingest queue, or find why its drain is slow."
    ),
    "ingest-import-stopped": _pipeline(
        "A file import through {where} is unfinished and its job ended: nothing carries it "
        "on. Read the job's error, fix the cause, then retry the job: the import resumes where "
        "it stopped."
    ),
}
