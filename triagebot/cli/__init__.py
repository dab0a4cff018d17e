"""The command line: `triage SUBCOMMAND`, one module a subcommand (main.py dispatches, common.py
declares the options they share and opens the store). Stage code never imports from here."""
