"""The refusals of bulk money actions, each with a stable ``code`` and a message naming the fix.

Each is a ``LitejobsError``; ``litejobs.bulk`` exports them beside the API that raises them.
"""

from typing import Any

from ..core.errors import LitejobsError

__all__ = ["BulkActionNotFound", "BulkRefused", "BulkSetChanged"]


class BulkActionNotFound(LitejobsError, LookupError):
    """No installed app declares a bulk money action by that name (in its ``queues.py``)."""

    code = "bulk-action-unknown"


class BulkRefused(LitejobsError, PermissionError):
    """A bulk money action was refused before any money moved; ``code`` says why and the
    message says what to do: ``bulk-forbidden`` (the action's permission is missing),
    ``bulk-device-missing`` (no confirmed TOTP device), ``bulk-binding-missing`` (the action
    binds nothing but the amount: litejobs.E013), ``bulk-code-missing``,
    ``bulk-code-invalid``, ``bulk-code-expired``, ``bulk-code-reused``, ``bulk-code-throttled``
    (the confirmation code was refused), ``bulk-preview-invalid`` / ``bulk-preview-expired`` (the
    preview the confirmation names cannot be trusted or is too old), ``bulk-item-not-failed``
    (a retry of an item that did not fail)."""

    code = "bulk-refused"


class ItemNotPending(BulkRefused):
    """An item's job ran while the item is not pending or retrying (its job was sent back to
    ready by other means than ``retry_item``): nothing executes."""

    code = "bulk-item-not-pending"


class BulkSetChanged(BulkRefused):
    """The items behind a confirmation changed after their preview (an item left the queue,
    was claimed, or its amount changed): nothing moved. ``preview`` is a fresh preview of the
    same selection to read and confirm again."""

    code = "bulk-set-changed"

    def __init__(self, message: str, *, preview: Any) -> None:
        super().__init__(message)
        self.preview = preview
