"""Notify stage: a report's triage told to the team (Slack or the terminal).

render (pure payloads), slack (SlackNotifier, NotifyError), terminal (TerminalNotifier),
plot (the A/B samples as a PNG). Which channel is rules data: triagebot.rules.routing.
"""
