"""Test-support helpers shared by the test suite (not part of the triagebot package)."""
