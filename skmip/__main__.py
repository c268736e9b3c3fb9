"""``python -m skmip``: the same as the ``skmip`` command."""

import sys

from skmip.app.cli import main

sys.exit(main())
