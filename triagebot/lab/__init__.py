"""The lab shared by reruns, bisections and fix tests: the run context (context.py), the queue as
the store shows it (queue.py), the job table on PostgreSQL (job_table.py), and which host a step
after the verdict runs on (runner.py).
"""
