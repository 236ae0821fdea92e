"""How the outbox plugs into litejobs (see ``litejobs.core.features``)."""

from ..core.features import Feature

feature = Feature("outbox")
