"""The reference codemode implementation: catalog and plan records, validation, and the plan→JS compiler.

``reference`` never imports ``conformance``; ``torch`` is imported only inside its model modules.
"""

from __future__ import annotations

__version__ = "0.1.0"
