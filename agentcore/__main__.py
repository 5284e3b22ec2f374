"""python -m agentcore: runs the command line (agentcore.cli)."""

import sys

from agentcore.cli import main

if __name__ == "__main__":
    sys.exit(main())
