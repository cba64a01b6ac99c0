"""The client against a real `stepwise serve` (crates/cli/tests/python_client.rs
starts it and sets STEPWISE_URL, STEPWISE_TOKEN, NOTES, WORKSPACE, PLAN)."""

import asyncio
import json
import os
import unittest

import httpx

from stepwise_client import AsyncClient, Client, StepwiseError
from stepwise_client.models import MODELS

URL = os.environ["STEPWISE_URL"]
TOKEN = os.environ["STEPWISE_TOKEN"]
NOTES = os.environ["NOTES"]
GOAL = "What is our latency budget?"


def properties(schema, schemas):
    """Every property name a schema allows, through $ref, allOf, oneOf and anyOf."""
    if "$ref" in schema:
        return properties(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas)
    names = set(schema.get("properties", {}))
    for key in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(key, []):
            names |= properties(sub, schemas)
    return names


class Live(unittest.TestCase):
    def setUp(self):
        self.client = Client(URL, TOKEN)

    def tearDown(self):
        self.client.close()

    def test_models_are_the_openapi_documents(self):
        doc = httpx.get(f"{URL}/v1/openapi.json").json()
        schemas = doc["components"]["schemas"]
        for model in MODELS:
            schema = schemas[model.__schema__]
            allowed = properties(schema, schemas)
            fields = {f for f in model.__dataclass_fields__ if f != "extra"}
            self.assertLessEqual(fields, allowed, f"{model.__name__}: fields the schema does not have")
            required = set(schema.get("required", []))
            self.assertLessEqual(required, fields, f"{model.__name__}: required properties the model lacks")

    def test_a_run_is_submitted_followed_live_and_its_report_read(self):
        run = self.client.submit(GOAL, NOTES)
        self.assertEqual(run.status, "queued")
        kinds = [e.kind for e in self.client.events(run.run_id)]
        self.assertEqual(kinds[0], "run_started")
        self.assertIn("synthesized", kinds)
        out = self.client.get_run(run.run_id)
        self.assertEqual(out.status, "ok")
        self.assertIn("[latency-budget]", out.final_report)
        # Resumed after event 3: the rest, from 4, nothing repeated.
        seqs = [e.seq for e in self.client.events(run.run_id, after=3)]
        self.assertEqual(seqs[0], 4)
        self.assertEqual(len(seqs), len(kinds) - 3)

    def test_a_paused_write_is_approved_by_its_hash(self):
        plan = json.loads(os.environ["PLAN"])
        run = self.client.submit("Save the latency budget", NOTES, plan=plan, workspace=os.environ["WORKSPACE"], approve="never")
        paused = self.client.wait(run.run_id)
        self.assertEqual(paused.status, "awaiting_approval")
        pending = self.client.pending(run.run_id)
        [step] = pending.steps
        self.assertEqual((step.step, step.tool), ("save", "write_file"))
        with self.assertRaises(StepwiseError) as refused:
            self.client.approve(run.run_id, steps={"save": "0" * 64})
        self.assertEqual(refused.exception.code, "stale_approval")
        approved = self.client.approve(run.run_id, steps={"save": step.args_hash})
        self.assertEqual(approved.approved, ["step save"])
        self.assertTrue(approved.resumed)
        self.assertEqual(self.client.wait(run.run_id).status, "ok")

    def test_refusals_raise_with_the_servers_code(self):
        with self.assertRaises(StepwiseError) as e:
            self.client.get_run("run_nope")
        self.assertEqual((e.exception.code, e.exception.status), ("run_not_found", 404))
        with self.assertRaises(StepwiseError) as e:
            Client(URL, "not-a-token-at-all").list_runs()
        self.assertEqual(e.exception.status, 401)
        with self.assertRaises(StepwiseError) as e:
            self.client.submit(GOAL, "../outside")
        self.assertEqual(e.exception.code, "path_not_allowed")

    def test_runs_are_listed_a_page_at_a_time(self):
        for _ in range(3):
            self.client.wait(self.client.submit(GOAL, NOTES).run_id)
        first = self.client.list_runs(limit=2)
        self.assertEqual(len(first.runs), 2)
        self.assertIsNotNone(first.next_cursor)
        every = list(self.client.iter_runs(page_size=2))
        self.assertGreaterEqual(len(every), 3)
        self.assertEqual(len({r.run_id for r in every}), len(every), "no run listed twice")
        self.assertEqual(every[0].run_id, first.runs[0].run_id)
        self.assertGreaterEqual(self.client.stats()["all"]["runs"], 3)

    def test_the_async_client_does_the_same(self):
        async def go():
            async with AsyncClient(URL, TOKEN) as client:
                run = await client.submit(GOAL, NOTES)
                kinds = [e.kind async for e in client.events(run.run_id)]
                out = await client.get_run(run.run_id)
                plan = json.loads(os.environ["PLAN"])
                paused = await client.submit("Save it", NOTES, plan=plan, workspace=os.environ["WORKSPACE"], approve="never")
                await client.wait(paused.run_id)
                cancelled = await client.cancel(paused.run_id, reason="not needed")
                return kinds, out, cancelled

        kinds, out, cancelled = asyncio.run(go())
        self.assertIn("synthesized", kinds)
        self.assertEqual(out.status, "ok")
        self.assertEqual(cancelled.status, "cancelled")


if __name__ == "__main__":
    unittest.main()
