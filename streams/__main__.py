"""``python -m baton_kafka.streams``: the ``baton`` command."""

import sys

from baton_kafka.streams.cli.main import main

sys.exit(main())
