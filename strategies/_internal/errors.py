"""Errors raised for bad arguments to a strategy."""

from __future__ import annotations

from hypothesis.errors import InvalidArgument

__all__ = ["InvalidArgument"]
