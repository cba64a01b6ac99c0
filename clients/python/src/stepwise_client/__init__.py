"""A client for the Stepwise HTTP API (``stepwise serve``): submit runs,
follow their events live (resumable), approve or reject side effects bound
to their arguments' hash, cancel, list and page runs, read reports."""

from ._client import AsyncClient, Client
from .errors import StepwiseError
from .models import (
    Approved,
    Event,
    FinalOutput,
    Pending,
    PendingStep,
    Rejected,
    RunItem,
    RunList,
    RunStatusBody,
    Submitted,
)

__all__ = [
    "AsyncClient",
    "Approved",
    "Client",
    "Event",
    "FinalOutput",
    "Pending",
    "PendingStep",
    "Rejected",
    "RunItem",
    "RunList",
    "RunStatusBody",
    "StepwiseError",
    "Submitted",
]
