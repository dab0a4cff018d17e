"""Store stage: the part for finished reruns — plans, runs with their samples, verdicts — bisections and
fix tests."""
from __future__ import annotations

import json
from typing import Any

from triagebot.records.states import RUN_CUT_SHORT
from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database
from triagebot.store.protocol import FIX_TEST_STATUSES, FixTestRow, StoreError


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class Runs:
    """`RunStore` on the `plans`, `runs` and `verdicts` tables."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def save_run(self, message_id: str, plan_json: dict[str, Any], run_json: dict[str, Any]) -> int:
        """Store a finished rerun: its plan, the run with every sample, and its verdict."""
        message_id = normalize_message_id(message_id)
        database = self._database
        with self._database.transaction():
            now = self._database.stamp()
            plan_id = int(database.execute(
                "INSERT INTO plans (message_id, created_at, plan_json) VALUES (?, ?, ?) RETURNING plan_id",
                (message_id, now, _dumps(plan_json))).fetchone()[0])
            run_id = int(database.execute(
                "INSERT INTO runs (plan_id, status, started_at, finished_at, run_json)"
                " VALUES (?, ?, ?, ?, ?) RETURNING run_id",
                (plan_id, run_json.get("status", "done"), run_json.get("started_at"),
                 run_json.get("finished_at"), _dumps(run_json))).fetchone()[0])
            verdict = run_json.get("verdict")
            if verdict is not None:
                database.execute(
                    "INSERT INTO verdicts (message_id, plan_id, verdict, decided_at, verdict_json)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (message_id, plan_id, verdict.get("outcome"), now, _dumps(verdict)))
        return run_id

    def latest_run(self, message_id: str) -> dict[str, Any] | None:
        """The last stored rerun of a report that ran to its end (run JSON with its samples and
        verdict, or its error), or None; runs cut short are not: see `cut_short_run`."""
        row = self._database.execute(
            "SELECT r.run_json FROM runs r JOIN plans p ON p.plan_id = r.plan_id"
            " WHERE p.message_id = ? AND r.status <> ? ORDER BY r.run_id DESC LIMIT 1",
            (normalize_message_id(message_id), RUN_CUT_SHORT)).fetchone()
        return json.loads(row[0]) if row else None

    def cut_short_run(self, message_id: str) -> dict[str, Any] | None:
        """The report's newest run when it was cut short (interrupted: its samples, no verdict),
        None when its newest run ran to its end or it has none."""
        row = self._database.execute(
            "SELECT r.status, r.run_json FROM runs r JOIN plans p ON p.plan_id = r.plan_id"
            " WHERE p.message_id = ? ORDER BY r.run_id DESC LIMIT 1",
            (normalize_message_id(message_id),)).fetchone()
        return json.loads(row[1]) if row and row[0] == RUN_CUT_SHORT else None

    def recent_runs(self, limit: int) -> list[dict[str, Any]]:
        """The last `limit` stored reruns of any report, newest first (run JSONs): a host's history."""
        rows = self._database.execute("SELECT run_json FROM runs ORDER BY run_id DESC LIMIT ?", (limit,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def save_bisect(self, message_id: str, bisect_json: dict[str, Any], bisect_id: int | None = None) -> int:
        """Store a bisection as it stands (a new one, or `bisect_id` replaced); its id."""
        database = self._database
        with database.transaction():
            now = database.stamp()
            status = str(bisect_json.get("status", "running"))
            if bisect_id is None:
                bisect_id = int(database.execute(
                    "INSERT INTO bisects (message_id, status, started_at, updated_at, bisect_json)"
                    " VALUES (?, ?, ?, ?, ?) RETURNING bisect_id",
                    (normalize_message_id(message_id), status, now, now, _dumps(bisect_json))).fetchone()[0])
            elif database.execute("UPDATE bisects SET status = ?, updated_at = ?, bisect_json = ?"
                                  " WHERE bisect_id = ?", (status, now, _dumps(bisect_json), bisect_id)
                                  ).rowcount != 1:
                raise StoreError(f"no bisection {bisect_id} to update")
        return bisect_id

    def bisects(self, message_id: str) -> list[dict[str, Any]]:
        """A report's bisections, oldest first, each its JSON with `bisect_id`."""
        rows = self._database.execute(
            "SELECT bisect_id, bisect_json FROM bisects WHERE message_id = ? ORDER BY bisect_id",
            (normalize_message_id(message_id),)).fetchall()
        return [json.loads(text) | {"bisect_id": bisect_id} for bisect_id, text in rows]

    def queue_fix_test(self, message_id: str, series_key: str, cause_id: str) -> int | None:
        """A new fix test, `queued`; its id, or None when this series of the report has one."""
        database = self._database
        with database.transaction():
            now = database.stamp()
            row = database.execute(
                "INSERT INTO fix_tests (message_id, series_key, cause_id, status, created_at, updated_at, result_json)"
                " VALUES (?, ?, ?, 'queued', ?, ?, '{}') ON CONFLICT DO NOTHING RETURNING fix_test_id",
                (normalize_message_id(message_id), series_key, normalize_message_id(cause_id), now, now)).fetchone()
        return int(row[0]) if row else None

    def set_fix_test(self, fix_test_id: int, status: str, result: dict[str, Any] | None = None) -> None:
        """Move a fix test to `status` (one of FIX_TEST_STATUSES), with its result when given."""
        if status not in FIX_TEST_STATUSES:
            raise StoreError(f"fix test status {status!r} is not one of {', '.join(FIX_TEST_STATUSES)}")
        database = self._database
        with database.transaction():
            now = database.stamp()
            if result is None:
                changed = database.execute("UPDATE fix_tests SET status = ?, updated_at = ? WHERE fix_test_id = ?",
                                           (status, now, fix_test_id)).rowcount
            else:
                changed = database.execute("UPDATE fix_tests SET status = ?, updated_at = ?, result_json = ?"
                                           " WHERE fix_test_id = ?", (status, now, _dumps(result), fix_test_id)
                                           ).rowcount
            if changed != 1:
                raise StoreError(f"no fix test {fix_test_id} to update")

    def fix_tests(self, message_id: str | None = None, status: str | None = None) -> list[FixTestRow]:
        """Fix tests of one report and/or in one status (None: any), oldest first."""
        clauses, values = [], []
        if message_id is not None:
            clauses.append("message_id = ?")
            values.append(normalize_message_id(message_id))
        if status is not None:
            clauses.append("status = ?")
            values.append(status)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._database.execute(
            "SELECT fix_test_id, message_id, series_key, cause_id, status, created_at, updated_at, result_json"
            f" FROM fix_tests{where} ORDER BY fix_test_id", tuple(values)).fetchall()
        return [FixTestRow(int(row[0]), row[1], row[2], row[3], row[4], row[5], row[6], json.loads(row[7]))
                for row in rows]
