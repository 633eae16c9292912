"""Implementation of the public ``strategies`` package; import from ``strategies`` instead."""
