"""`python -m evaluation.harness`: see cli.py."""

import sys

from evaluation.harness.cli import main

sys.exit(main())
