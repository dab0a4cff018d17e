"""Presentation: a fix test as `triage show` prints it — the call, the kernels and runs, the
patches, who had it built (or that it waits for a person), and the drafted reply (never sent).
Pure: a stored row in, text out."""
from __future__ import annotations

from triagebot.store.protocol import FixTestRow


def render_fix_test(row: FixTestRow) -> str:
    """The lines of one fix test under a report's rerun."""
    result = row.result
    head = f"  fix test {row.fix_test_id} ({row.series_key.split(':', 1)[0]}, {row.status}, {row.updated_at})"
    asked = _who(result)
    if row.status != "done":
        reason = result.get("reason") or ("waiting for its host" if row.status == "queued" else "under way")
        how = (f"\n    a person may test it: triage test-fix {row.message_id} (or Slack's Test fix)"
               if row.status == "waiting" else "")
        return f"{head}: {reason}\n    proposed in <{row.cause_id}>{how}" + (f"\n    {asked}" if asked else "")
    verdict = result.get("verdict") or {}
    lines = [f"{head} on {result.get('host', '?')}: {result['recovery']['sentence']}",
             f"    {str(result.get('suspect', '?'))[:12]} against {str(result.get('patched', '?'))[:12]} (patched), "
             f"{verdict.get('runs_base')}+{verdict.get('runs_suspect')} runs; proposed in <{row.cause_id}>"]
    if asked:
        lines.append(f"    {asked}")
    lines += [f"    {subject}" for subject in result.get("subjects", [])]
    if result.get("draft"):
        lines.append("    drafted reply (not sent):")
        lines += [f"      {line}" if line else "" for line in result["draft"].splitlines()]
    return "\n".join(lines)


def _who(result: dict) -> str:
    """Who had the series built: a person who asked, else why the daemon could ("" when unknown)."""
    if result.get("asked_by"):
        return f"built because {result['asked_by']} asked"
    if result.get("allowed"):
        return f"built by the daemon: {result['allowed']}"
    return ""
