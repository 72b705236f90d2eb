"""``python -m mibench.cli``: the ``mibench`` command."""
import sys

from mibench.cli import main

sys.exit(main())
