"""``python -m conformance``: the ``codemode`` command, for where its script is not on PATH."""

from __future__ import annotations

import sys

from conformance.cli import main

sys.exit(main())
