"""The refusals of batches and job dependencies, each with a stable ``code`` and a message
naming the fix. Each is a ``LitejobsError``; ``litejobs.batches`` exports them beside the API
that raises them."""

from ..core.errors import LitejobsError

__all__ = ["BatchClosed", "BatchInvalid", "BatchNotFound", "DependencyCycle", "DependencyInvalid"]


class BatchInvalid(LitejobsError, ValueError):
    """A batch was opened with a callback that is not a declared ``@job`` taking ``batch_id``,
    ``done``, ``dead`` and ``cancelled`` (``batch-callback-invalid``), or whose key a live job
    already holds (``batch-callback-taken``); nothing was written."""

    code = "batch-callback-invalid"


class BatchClosed(LitejobsError):
    """A job was added to a batch whose callback has been released (every child had ended):
    add children from a running child, or open a new batch."""

    code = "batch-closed"


class BatchNotFound(LitejobsError, LookupError):
    """No batch has that id (it never existed, or its block rolled back)."""

    code = "batch-unknown"


class DependencyInvalid(LitejobsError, ValueError):
    """``depends_on`` is not a list of job ids or ``Enqueued`` answers
    (``depends-on-invalid``), or ``on_upstream_failure`` is not ``cancel``, ``run`` or
    ``skip`` (``upstream-policy-invalid``); nothing was written."""

    code = "depends-on-invalid"


class DependencyCycle(LitejobsError, ValueError):
    """An enqueue answered by a live job already holding the key asked that job to wait on
    itself, or on a job that waits on it (directly or through others): it could never run.
    Nothing was written."""

    code = "dependency-cycle"
