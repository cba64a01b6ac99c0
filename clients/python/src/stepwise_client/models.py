"""What the API answers, as the OpenAPI document (`/v1/openapi.json`) names
it. Each model's fields are the schema's properties of the same name; the
test suite checks them against the document a live server serves.
Unknown fields are kept in ``extra`` so a newer server never breaks a client."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional


def _build(cls, data: Dict[str, Any]):
    names = {f.name for f in fields(cls)} - {"extra"}
    known = {k: v for k, v in data.items() if k in names}
    obj = cls(**known)
    obj.extra = {k: v for k, v in data.items() if k not in names}
    return obj


@dataclass
class Submitted:
    """POST /v1/runs: the run was recorded and queued."""

    __schema__ = "Submitted"
    run_id: str
    status: str
    links: Dict[str, str]
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class RunItem:
    """One run of a listing."""

    __schema__ = "RunItem"
    run_id: str
    goal: str
    status: str
    started_at: str
    updated_at: str
    steps_done: int
    steps_total: int
    replans: int
    tokens: int
    last_seq: int
    strategy: str = ""
    held_by: Optional[str] = None
    cost_usd: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class RunList:
    """A page of runs, newest first; `next_cursor` asks for the next page."""

    __schema__ = "RunList"
    runs: List[RunItem]
    next_cursor: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class FinalOutput:
    """A run, exactly as ``stepwise show RUN --json`` prints it."""

    __schema__ = "FinalOutput"
    run_id: str
    status: str
    strategy: str = ""
    plan_version: int = 0
    replan_count: int = 0
    step_results: Dict[str, Any] = field(default_factory=dict)
    final_report: Optional[str] = None
    knowledge_gaps: List[str] = field(default_factory=list)
    evidence: List[Dict[str, Any]] = field(default_factory=list)
    blocked_reason: Optional[str] = None
    plan: List[Dict[str, Any]] = field(default_factory=list)
    usage: Dict[str, Any] = field(default_factory=dict)
    execution_history: List[Dict[str, Any]] = field(default_factory=list)
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Event:
    """One event of a run's log: `seq`, `at`, `kind` and the kind's fields."""

    __schema__ = "Event"
    seq: int
    at: str
    kind: str = ""
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class PendingStep:
    """A side-effect step waiting for an approval of exactly these arguments."""

    __schema__ = "PendingStep"
    step: str
    tool: str
    args: Any
    args_hash: str
    destructive: bool = False
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Pending:
    """What a paused run waits for."""

    __schema__ = "Pending"
    run_id: str
    status: str
    steps: List[PendingStep]
    plan_version: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Approved:
    """POST /v1/runs/{id}/approve."""

    __schema__ = "Approved"
    run_id: str
    approved: List[str]
    pending: Pending
    resumed: bool
    status: str
    delivered_to: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Rejected:
    """POST /v1/runs/{id}/reject."""

    __schema__ = "Rejected"
    run_id: str
    rejected: List[str]
    status: str
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class RunStatusBody:
    """POST /v1/runs/{id}/resume and /cancel."""

    __schema__ = "RunStatusBody"
    run_id: str
    status: str
    extra: Dict[str, Any] = field(default_factory=dict, repr=False)


def submitted(data) -> Submitted:
    return _build(Submitted, data)


def run_list(data) -> RunList:
    page = _build(RunList, data)
    page.runs = [_build(RunItem, r) for r in data.get("runs", [])]
    return page


def final_output(data) -> FinalOutput:
    return _build(FinalOutput, data)


def event(data) -> Event:
    return _build(Event, data)


def pending(data) -> Pending:
    p = _build(Pending, data)
    p.steps = [_build(PendingStep, s) for s in data.get("steps", [])]
    return p


def approved(data) -> Approved:
    a = _build(Approved, data)
    a.pending = pending(data.get("pending", {"run_id": a.run_id, "status": a.status, "steps": []}))
    return a


def rejected(data) -> Rejected:
    return _build(Rejected, data)


def run_status(data) -> RunStatusBody:
    return _build(RunStatusBody, data)


MODELS = [Submitted, RunItem, RunList, FinalOutput, Event, PendingStep, Pending, Approved, Rejected, RunStatusBody]
