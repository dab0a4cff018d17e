"""Reproduce stage: reports become validated plans from the rules/reproducers/ templates
(triagebot.rules.templates; commandline.py, plan.py, plan_command.py); host choice (hosts.py),
executors, output parsers and the runner follow."""
