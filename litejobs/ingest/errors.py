"""The refusals of ingest pipelines, each with a stable ``code`` and a message naming the fix.

Each is a ``LitejobsError``; ``litejobs.ingest`` exports them beside the API that raises them.
"""

from ..core.errors import LitejobsError

__all__ = [
    "BufferFull",
    "ConsumerNotFound",
    "FetchRefused",
    "ImportRefused",
    "PipelineNotFound",
    "ReasonOutsideSet",
    "SourceUndeclared",
]


class PipelineNotFound(LitejobsError, LookupError):
    """No installed app declares a pipeline by that name (in its ``pipelines.py``)."""

    code = "pipeline-unknown"


class SourceUndeclared(LitejobsError, KeyError):
    """An enrich step read a source its ``@enrich(sources=…)`` does not name; name it there."""

    code = "ingest-source-undeclared"

    def __str__(self) -> str:  # KeyError would quote the message
        return f"[{self.code}] {self.args[0]}"


class ReasonOutsideSet(LitejobsError, ValueError):
    """A drop step answered something other than None or one of its declared reasons; the
    record is counted as errored, never dropped silently."""

    code = "ingest-reason-outside-set"


class BufferFull(LitejobsError):
    """``feed()`` waited for room in a pipeline buffer whose overflow is ``block`` and none
    came in time; nothing of that call was written. Retry later, run more workers or raise
    the buffer's capacity."""

    code = "ingest-buffer-full"


class ImportRefused(LitejobsError, ValueError):
    """A file import was refused before any of its rows was written; ``code`` says why:
    ``ingest-header-mismatch`` (the CSV header does not name exactly the declared columns),
    ``ingest-format-invalid`` (a format other than ``csv`` or ``ndjson``),
    ``ingest-file-name-invalid`` (not a relative name inside the storage),
    ``ingest-file-missing`` (no regular file of that name among the pipeline's files),
    ``ingest-files-undeclared`` (the pipeline declares no ``files=``)."""

    code = "ingest-header-mismatch"


class ConsumerNotFound(LitejobsError, LookupError):
    """The pipeline declares no consumer by that key (``@pipeline.consumer(key)`` in
    the app's ``pipelines.py``)."""

    code = "ingest-consumer-unknown"


class FetchRefused(LitejobsError, ValueError):
    """A consumer's fetch answered something it may not; nothing of that batch was written and
    the position did not move. ``code`` says why: ``ingest-fetch-answer-invalid`` (not a tuple
    ``(records, next_position)`` whose records are a list of records),
    ``ingest-position-not-json`` (the next position is no JSON value: a date, a tuple, a set,
    an object), ``ingest-position-stuck`` (records with the position they were read from: the
    next fetch would read them again)."""

    code = "ingest-fetch-refused"
