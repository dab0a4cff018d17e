"""The daemon: the scheduled loop (loop.py), its steps over stored state (flow.py), /healthz and
/metrics (health.py), the after-verdict threads (after_verdict_jobs.py), and dispatch/ (who
carries out lab runs).
"""
