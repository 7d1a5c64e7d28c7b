"""python -m torch_domino.topology: what domino detected and decided (see _topology.py)."""

import sys

from torch_domino._topology import main

if __name__ == "__main__":
    sys.exit(main())
