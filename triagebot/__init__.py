"""triagebot: triage Linux kernel performance-regression reports."""
