"""Presentation: a stored report turned into lines and views for `triage show`, the web pages and
Slack — summary.py, report_view.py, fix_view.py, dates.py.
"""
