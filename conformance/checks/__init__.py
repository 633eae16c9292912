"""Clause checks: plain functions that yield :class:`~reference.violations.Violation` and never raise
for a bad implementation. One function per clause id, named after it in snake_case."""
