"""Moved to ``litejobs.jobs.workflows``; this path keeps working."""

from .jobs.workflows import Compensation, Step, Workflow, use_case, workflow

__all__ = ["Compensation", "Step", "Workflow", "use_case", "workflow"]
