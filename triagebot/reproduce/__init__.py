"""Reproduce stage: reports become validated plans from rules/reproducers/ templates (templates.py,
commandline.py, plan.py, plan_command.py); hosts, executors, output parsers and the runner follow."""
