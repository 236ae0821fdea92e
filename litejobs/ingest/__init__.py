"""Ingest pipelines: outside records (a vendor's file, a partner's feed, a webhook's batch)
land in the app's tables through ordered drop and enrich steps, with every dropped record
explained by one reason of a closed set.

``declarations`` (``@drop``, ``@enrich``, ``Buffer``, ``Freshness``: what a pipeline is made
of), ``processing`` (a batch through the steps and the sink), ``draining`` (the job that
empties the buffer), ``buffer`` (``feed`` and its overflow, ``replay``), ``reader`` (CSV and
NDJSON pages on bytes), ``imports`` (resumable file imports), ``consumers`` (the consumers of
pull sources, each paging from its stored position: ``@pipeline.consumer`` and the job that
runs them), ``operations`` (what operators read about each pipeline, and its replays and
imports), ``stats`` and ``pipelines`` (``pipeline()`` and the ``Pipeline`` it answers). This
package's face is the API users call.
"""

from .consumers import Consumer
from .declarations import Buffer, Files, Freshness, drop, enrich
from .errors import (
    BufferFull,
    ConsumerNotFound,
    FetchRefused,
    ImportRefused,
    PipelineNotFound,
    ReasonOutsideSet,
    SourceUndeclared,
)
from .pipelines import Pipeline, pipeline

__all__ = [
    "Buffer",
    "BufferFull",
    "Consumer",
    "ConsumerNotFound",
    "FetchRefused",
    "Files",
    "Freshness",
    "ImportRefused",
    "Pipeline",
    "PipelineNotFound",
    "ReasonOutsideSet",
    "SourceUndeclared",
    "drop",
    "enrich",
    "pipeline",
]
