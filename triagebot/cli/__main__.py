"""`python3 -m triagebot.cli ...`: the same as the `triage` console script."""
import sys

from triagebot.cli.main import main

sys.exit(main())
