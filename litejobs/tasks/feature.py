"""How Django Tasks plug into litejobs (``litejobs.core.features``): importing this registers
how stored task rows run. Loaded only when Django Tasks is installed."""

from ..core.features import Feature
from . import backend  # noqa: F401 - registers how stored task rows run

feature = Feature("tasks")
