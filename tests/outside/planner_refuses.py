#!/usr/bin/env python3
"""planner_refuses.py -- an outside planner that refuses every plan request.

Role: planner (and pipeline).  Written from SPEC.md alone (Python 3.11, stdlib only).
  {"instruction": I, "tools": T}  ->  {"diagnostic": D}   (always; it never plans)
  {"plan": P, "tools": T}          ->  answered by compiler_slow (no sleep): {"js": J} or {"diagnostic": D}
  anything else                    ->  {"diagnostic": D}

It still parses every line and validates every catalog as SPEC.md requires,
only to word its diagnostics; every hard clause that applies to a planner
holds because every plan request gets exactly {"diagnostic": D}.  The scored
clauses PL-ACCURACY and PL-REJECT's false-diagnosis rate fail, as they should.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compiler_slow as cs  # noqa: E402


def answer(raw):
    try:
        req = cs.parse_line(raw)
    except cs.BadRecord as exc:
        return {"diagnostic": f"bad record: {exc}"}
    try:
        if cs.is_compile_request(req):
            return cs.compile_request(req)
        if cs.is_plan_request(req):
            why = cs.catalog_problem(req["tools"])
            if why:
                return {"diagnostic": "invalid catalog: " + why}
            return {"diagnostic": "refused: this planner declines every instruction"}
    except RecursionError:
        return {"diagnostic": "request too deeply nested"}
    return {"diagnostic": "bad record: expected {instruction, tools} or {plan, tools}"}


def main():
    try:
        cs.serve(answer)
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
