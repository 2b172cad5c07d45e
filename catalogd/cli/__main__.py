"""``python -m catalogd.cli``: the same as the ``catalogd`` console script."""

from __future__ import annotations

import sys

from catalogd.cli.app import main

sys.exit(main())
