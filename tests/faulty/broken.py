"""Implementations that misbehave as processes: the kit must report them as errored, never as a pass
and never by crashing itself. ``python -m tests.faulty.broken HOW``."""

from __future__ import annotations

import sys
import time

from reference import jsonio
from reference.cli import compile_handler
from reference.protocol import respond


def main(how: str) -> int:
    count = 0
    for raw in sys.stdin.buffer:
        count += 1
        answer = jsonio.dumps(respond(raw.rstrip(b"\n"), compile_handler))
        if how == "crash" and count == 5:
            print("boom: the compiler fell over", file=sys.stderr)
            return 3
        if how == "hang" and count == 5:
            time.sleep(3600)
        if how == "garbage" and count % 4 == 0:
            answer = "this is not json"
        if how == "extra-line" and count == 3:
            answer += "\n" + answer
        if how == "array" and count % 3 == 0:
            answer = "[]"
        if how == "dead":
            print("cannot load model", file=sys.stderr)
            return 1
        if how.startswith("counting="):  # a good compiler that logs one line per request to a file
            with open(how.removeprefix("counting="), "a", encoding="utf-8") as log:
                log.write("request\n")
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
