"""Rows that test job bodies write, so tests can count effects."""

from django.db import models


class Mark(models.Model):
    """One effect of a job body (label + value); tests count them."""

    label = models.CharField(max_length=100)
    value = models.IntegerField(default=0)
    note = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.label}={self.value}"
