"""``python -m smart_agent.cli``: the same as the ``smart-agent`` command."""

import sys

from . import main

sys.exit(main())
