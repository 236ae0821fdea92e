"""A manual job declared without a guard, for the system check tests."""

from litejobs import manual
from tests.testapp.jobs import scheduled_mark

manual("bad.unguarded", job=scheduled_mark, runs_where="*")
