"""``python -m streams``: the ``baton`` command."""

import sys

from streams.cli.main import main

sys.exit(main())
