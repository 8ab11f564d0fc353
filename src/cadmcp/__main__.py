"""`python -m cadmcp` runs the command line."""

import sys

from cadmcp.cli import main

sys.exit(main())
