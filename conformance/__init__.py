"""The conformance kit: clauses, IUT adapters, checks, the V8 host, certification runs and reports.

``conformance`` may use ``reference`` and ``strategies``; neither imports it.
"""
