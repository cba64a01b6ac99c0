"""The clients: :class:`Client` (blocking) and :class:`AsyncClient`, the same
methods, each one request of the API (see docs/server.md)."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

import httpx

from . import models
from ._sse import Parser, messages
from .errors import StepwiseError, raise_for


def _submit_body(goal: str, notes: str, **options: Any) -> Dict[str, Any]:
    body: Dict[str, Any] = {"goal": goal, "notes": notes}
    body.update({k: v for k, v in options.items() if v is not None})
    return body


def _approve_body(steps: Optional[Dict[str, str]], plan_version: Optional[int], resume: bool) -> Dict[str, Any]:
    body: Dict[str, Any] = {"resume": resume}
    if steps:
        body["steps"] = [{"step": s, "args_hash": h} for s, h in steps.items()]
    if plan_version is not None:
        body["plan_version"] = plan_version
    return body


# Events after which a run waits for nothing more: it ended, or it paused
# for a person (a later resume goes on in the same log).
_STOPS = {"synthesized", "run_failed", "run_cancelled", "needs_review", "awaiting_approval"}



def _at_rest(out: models.FinalOutput) -> bool:
    """Whether nothing is under way: the log ends with an end or a pause
    (an approval or a resume recorded after a pause means it goes on)."""
    history = out.execution_history
    return bool(history) and history[-1].get("kind") in _STOPS


def _last_seq(out: models.FinalOutput) -> int:
    return max((e.get("seq", 0) for e in out.execution_history), default=0)


def _event_of(message) -> Optional[models.Event]:
    if message.event == "end" or not message.data:
        return None
    return models.event(json.loads(message.data))


class Client:
    """A blocking client: ``Client("http://127.0.0.1:8472", token=TOKEN)``."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0, transport=None) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _json(self, method: str, path: str, **kwargs) -> Any:
        response = self._http.request(method, path, **kwargs)
        raise_for(response)
        return response.json()

    def submit(self, goal: str, notes: str, **options: Any) -> models.Submitted:
        """Records a run and queues it (its id at once). Options are the body's
        other fields: constraints, workspace, plan, approve, model, strategy, …"""
        return models.submitted(self._json("POST", "/v1/runs", json=_submit_body(goal, notes, **options)))

    def list_runs(self, status: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> models.RunList:
        """A page of the tenant's runs, newest first."""
        params = {k: v for k, v in {"status": status, "limit": limit, "cursor": cursor}.items() if v is not None}
        return models.run_list(self._json("GET", "/v1/runs", params=params))

    def iter_runs(self, status: Optional[str] = None, page_size: int = 50) -> Iterator[models.RunItem]:
        """Every run, following the pages."""
        cursor = None
        while True:
            page = self.list_runs(status=status, limit=page_size, cursor=cursor)
            yield from page.runs
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_run(self, run_id: str) -> models.FinalOutput:
        """The run as ``stepwise show RUN --json`` prints it (report included)."""
        return models.final_output(self._json("GET", f"/v1/runs/{run_id}"))

    def report(self, run_id: str) -> Optional[str]:
        """The run's report (Markdown), once it has one."""
        return self.get_run(run_id).final_report

    def stats(self) -> Dict[str, Any]:
        """Run health over the tenant's runs (``stepwise stats --json``)."""
        return self._json("GET", "/v1/stats")

    def pending(self, run_id: str) -> models.Pending:
        """What a paused run waits for, each step with its arguments' hash."""
        return models.pending(self._json("GET", f"/v1/runs/{run_id}/approvals"))

    def approve(self, run_id: str, steps: Optional[Dict[str, str]] = None, plan_version: Optional[int] = None, resume: bool = True) -> models.Approved:
        """Approves steps, each bound to the `args_hash` it asked with
        (``{"save": "9f2c…"}``), and/or a plan version; resumes the run once
        nothing is left pending unless `resume` is false."""
        return models.approved(self._json("POST", f"/v1/runs/{run_id}/approve", json=_approve_body(steps, plan_version, resume)))

    def reject(self, run_id: str, reason: str) -> models.Rejected:
        return models.rejected(self._json("POST", f"/v1/runs/{run_id}/reject", json={"reason": reason}))

    def resume(self, run_id: str, **options: Any) -> models.RunStatusBody:
        return models.run_status(self._json("POST", f"/v1/runs/{run_id}/resume", json=options))

    def cancel(self, run_id: str, reason: Optional[str] = None) -> models.RunStatusBody:
        body = {} if reason is None else {"reason": reason}
        return models.run_status(self._json("POST", f"/v1/runs/{run_id}/cancel", json=body))

    def events(self, run_id: str, after: Optional[int] = None, reconnects: int = 5) -> Iterator[models.Event]:
        """The run's events as they are recorded (server-sent events), from
        the one after `after`, until the run ends. A dropped connection is
        resumed with ``Last-Event-ID``: no event is missed or repeated."""
        last = after
        tries = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                with self._http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers, timeout=None) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise_for(response)
                    for message in messages(response.iter_lines()):
                        if message.event == "end":
                            return
                        ev = _event_of(message)
                        if ev is not None:
                            last = ev.seq
                            yield ev
                return
            except (httpx.TransportError,) as e:
                tries += 1
                if tries > reconnects:
                    raise StepwiseError("stream_lost", str(e), 0) from e

    def wait(self, run_id: str) -> models.FinalOutput:
        """Waits until the run is at rest — ended, or paused for a person —
        following its events from where its log stands, then reads it. (After
        ``approve(..., resume=False)`` the run stays paused until resumed.)"""
        out = self.get_run(run_id)
        if _at_rest(out):
            return out
        for ev in self.events(run_id, after=_last_seq(out)):
            if ev.kind in _STOPS:
                break
        return self.get_run(run_id)


class AsyncClient:
    """The same methods as :class:`Client`, to await."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0, transport=None) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def _json(self, method: str, path: str, **kwargs) -> Any:
        response = await self._http.request(method, path, **kwargs)
        raise_for(response)
        return response.json()

    async def submit(self, goal: str, notes: str, **options: Any) -> models.Submitted:
        return models.submitted(await self._json("POST", "/v1/runs", json=_submit_body(goal, notes, **options)))

    async def list_runs(self, status: Optional[str] = None, limit: Optional[int] = None, cursor: Optional[str] = None) -> models.RunList:
        params = {k: v for k, v in {"status": status, "limit": limit, "cursor": cursor}.items() if v is not None}
        return models.run_list(await self._json("GET", "/v1/runs", params=params))

    async def get_run(self, run_id: str) -> models.FinalOutput:
        return models.final_output(await self._json("GET", f"/v1/runs/{run_id}"))

    async def stats(self) -> Dict[str, Any]:
        return await self._json("GET", "/v1/stats")

    async def pending(self, run_id: str) -> models.Pending:
        return models.pending(await self._json("GET", f"/v1/runs/{run_id}/approvals"))

    async def approve(self, run_id: str, steps: Optional[Dict[str, str]] = None, plan_version: Optional[int] = None, resume: bool = True) -> models.Approved:
        return models.approved(await self._json("POST", f"/v1/runs/{run_id}/approve", json=_approve_body(steps, plan_version, resume)))

    async def reject(self, run_id: str, reason: str) -> models.Rejected:
        return models.rejected(await self._json("POST", f"/v1/runs/{run_id}/reject", json={"reason": reason}))

    async def resume(self, run_id: str, **options: Any) -> models.RunStatusBody:
        return models.run_status(await self._json("POST", f"/v1/runs/{run_id}/resume", json=options))

    async def cancel(self, run_id: str, reason: Optional[str] = None) -> models.RunStatusBody:
        body = {} if reason is None else {"reason": reason}
        return models.run_status(await self._json("POST", f"/v1/runs/{run_id}/cancel", json=body))

    async def events(self, run_id: str, after: Optional[int] = None, reconnects: int = 5) -> AsyncIterator[models.Event]:
        last = after
        tries = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                async with self._http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers, timeout=None) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise_for(response)
                    parser = Parser()
                    async for line in response.aiter_lines():
                        message = parser.feed(line.rstrip("\r"))
                        if message is None:
                            continue
                        if message.event == "end":
                            return
                        ev = _event_of(message)
                        if ev is not None:
                            last = ev.seq
                            yield ev
                return
            except (httpx.TransportError,) as e:
                tries += 1
                if tries > reconnects:
                    raise StepwiseError("stream_lost", str(e), 0) from e

    async def wait(self, run_id: str) -> models.FinalOutput:
        out = await self.get_run(run_id)
        if _at_rest(out):
            return out
        async for ev in self.events(run_id, after=_last_seq(out)):
            if ev.kind in _STOPS:
                break
        return await self.get_run(run_id)
