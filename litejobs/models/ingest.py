"""Ingest pipelines' records: the buffer, the records set aside, the counts, the overflow
events, the file imports with their error reports, and the consumers' positions.

A fed record waits in ``BufferedRecord`` (the buffer: a table with a capacity) until the
pipeline's drain job takes it. A record that does not land is kept as a ``SetAsideRecord``
with its reason (dropped) or its error (errored), so it can be replayed after a fix. Every
outcome is counted per pipeline, hour, outcome and reason in ``IngestCount``, in the
transaction that decides it. A file import is an ``ImportRun``: its byte offset moves in the
transaction that writes the page before it, and the rows it refused are ``ImportRefusal``
rows (where and why, never the value).
"""

from django.db import models
from django.db.models import Q

from ..core import times
from ..core.enums import ImportState, IngestOutcome

__all__ = [
    "BufferedRecord",
    "ImportRefusal",
    "ImportRun",
    "IngestCount",
    "IngestPosition",
    "OverflowEvent",
    "SetAsideRecord",
]


class BufferedRecord(models.Model):
    """One fed record waiting in its pipeline's buffer, oldest first."""

    id = models.BigAutoField(primary_key=True)
    pipeline = models.CharField(max_length=200)
    key = models.CharField(max_length=500, help_text="The record's key, from the pipeline's key=.")
    payload = models.JSONField()
    fed_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_bufferedrecord"
        ordering = ["id"]
        verbose_name = "buffered record"
        indexes = [models.Index(fields=["pipeline", "id"], name="litejobs_buffer_order")]

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.key}"


class SetAsideRecord(models.Model):
    """A record that did not land: dropped with one reason of its pipeline's closed set, or
    errored (a step answered a reason outside the set, read an undeclared source, ...)."""

    id = models.BigAutoField(primary_key=True)
    pipeline = models.CharField(max_length=200)
    key = models.CharField(max_length=500)
    outcome = models.CharField(max_length=20, choices=IngestOutcome.choices)
    reason = models.CharField(
        max_length=100, blank=True, db_default="", help_text="The drop reason (dropped only)."
    )
    step = models.CharField(
        max_length=200, blank=True, db_default="", help_text="The step that dropped or failed it."
    )
    error = models.TextField(blank=True, db_default="", help_text="Why it errored (no values).")
    attempts = models.PositiveIntegerField(db_default=1)
    payload = models.JSONField()
    set_aside_at = models.DateTimeField()
    replayed_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was fed again (pipeline replay)."
    )

    class Meta:
        db_table = "litejobs_setasiderecord"
        ordering = ["-id"]
        verbose_name = "set-aside record"
        indexes = [
            models.Index(
                fields=["pipeline", "reason", "id"],
                name="litejobs_setaside_replayable",
                condition=Q(replayed_at__isnull=True),
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(outcome=IngestOutcome.DROPPED, reason__gt="")
                | Q(outcome=IngestOutcome.ERRORED, reason=""),
                name="litejobs_setaside_reason_iff_dropped",
            )
        ]

    def __str__(self) -> str:
        # Not the key: it is the outside data's, shown only to those who may see values.
        return f"{self.pipeline}: record {self.pk} ({self.reason or self.outcome})"


class IngestCount(models.Model):
    """How many records of a pipeline had one outcome (and reason) within one hour."""

    id = models.BigAutoField(primary_key=True)
    pipeline = models.CharField(max_length=200)
    hour = models.DateTimeField(help_text="The start of the hour (UTC).")
    outcome = models.CharField(max_length=20, choices=IngestOutcome.choices)
    reason = models.CharField(max_length=100, blank=True, db_default="")
    count = models.BigIntegerField(db_default=0)

    class Meta:
        db_table = "litejobs_ingestcount"
        ordering = ["-hour"]
        verbose_name = "ingest count"
        # The admin shows the pipelines' overview in place of these rows' list.
        verbose_name_plural = "pipelines"
        constraints = [
            models.UniqueConstraint(
                fields=["pipeline", "hour", "outcome", "reason"], name="litejobs_ingestcount_one"
            )
        ]

    def __str__(self) -> str:
        return (
            f"{self.pipeline} {self.hour:%Y-%m-%d %H}h {self.outcome} {self.reason}: {self.count}"
        )


class OverflowEvent(models.Model):
    """A feed found its pipeline's buffer full, and what the declared overflow did."""

    id = models.BigAutoField(primary_key=True)
    pipeline = models.CharField(max_length=200)
    overflow = models.CharField(max_length=20)
    at = models.DateTimeField()
    capacity = models.PositiveIntegerField()
    buffered = models.PositiveIntegerField(help_text="Records buffered when the feed came.")
    fed = models.PositiveIntegerField(help_text="Records the feed brought.")
    dropped = models.PositiveIntegerField(
        db_default=0, help_text="Oldest records dropped (drop_oldest)."
    )
    refused = models.BooleanField(
        db_default=False, help_text="The feed was refused after waiting (block)."
    )

    class Meta:
        db_table = "litejobs_overflowevent"
        ordering = ["-id"]
        verbose_name = "overflow event"
        indexes = [models.Index(fields=["pipeline", "-at"], name="litejobs_overflow_recent")]

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.overflow} at {times.when(self.at)}"


class ImportRun(models.Model):
    """One file imported through a pipeline, resumable from its byte offset."""

    id = models.BigAutoField(primary_key=True)
    pipeline = models.CharField(max_length=200)
    file = models.CharField(max_length=500, help_text="The file's name in its storage.")
    format = models.CharField(max_length=10)
    state = models.CharField(
        max_length=20, choices=ImportState.choices, db_default=ImportState.RUNNING
    )
    offset = models.BigIntegerField(
        db_default=0, help_text="Bytes read and written so far: a resumed import starts here."
    )
    line = models.BigIntegerField(db_default=1, help_text="The line number at the offset.")
    size = models.BigIntegerField(null=True, blank=True, help_text="The file's size in bytes.")
    accepted = models.BigIntegerField(db_default=0)
    dropped = models.BigIntegerField(db_default=0)
    errored = models.BigIntegerField(db_default=0)
    refused = models.BigIntegerField(db_default=0, help_text="Rows refused by the reader.")
    error = models.TextField(blank=True, db_default="")
    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "litejobs_importrun"
        ordering = ["-id"]
        verbose_name = "file import"

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.file}"


class ImportRefusal(models.Model):
    """One row a file import refused: where (line, byte offset, field) and why (a code) —
    never the row's value, which may hold anything."""

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(ImportRun, on_delete=models.CASCADE, related_name="refusals")
    line = models.BigIntegerField()
    offset = models.BigIntegerField()
    field = models.CharField(max_length=200, blank=True, db_default="")
    code = models.CharField(max_length=50)

    class Meta:
        db_table = "litejobs_importrefusal"
        ordering = ["run", "offset"]
        verbose_name = "refused row"

    def __str__(self) -> str:
        return f"line {self.line}: {self.code}"


class IngestPosition(models.Model):
    """Where a consumer of a pull source stands, per key: moved in the transaction that writes
    the batch it read."""

    id = models.BigAutoField(primary_key=True)
    pipeline = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    position = models.JSONField(null=True, blank=True)
    batches = models.BigIntegerField(db_default=0)
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_ingestposition"
        ordering = ["pipeline", "key"]
        verbose_name = "consumer position"
        constraints = [
            models.UniqueConstraint(fields=["pipeline", "key"], name="litejobs_ingestposition_one")
        ]

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.key}"
