"""The kit's own JSON Schemas (``conformance/schemas/``): expectations, the implementation manifest, and
the lines of a JSON Lines report. They refer to each other by ``$id``; :func:`validator` resolves those
references locally, never over the network."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

NAMES = ("expectations", "manifest", "report-line", "corpus-line")


class BadFile(ValueError):
    """A file the kit reads (manifest, expectations) that is not what its schema says."""


@cache
def load(name: str) -> dict[str, Any]:
    text = resources.files("conformance").joinpath("schemas", f"{name}.schema.json").read_text("utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def validator(name: str) -> Any:
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources(
        (load(other)["$id"], Resource.from_contents(load(other))) for other in NAMES
    )
    return jsonschema.Draft202012Validator(
        load(name), registry=registry, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


def problems(name: str, value: Any) -> list[str]:
    """Every way ``value`` breaks schema ``name``, each as ``message (at path)``."""
    out = []
    for error in sorted(validator(name).iter_errors(value), key=lambda e: [str(p) for p in e.path]):
        where = "/".join(str(p) for p in error.path) or "the top level"
        out.append(f"{error.message} (at {where})")
    return out


def read(name: str, path: Path) -> Any:
    """The JSON in ``path``, checked against schema ``name``; :class:`BadFile` says what is wrong."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BadFile(f"{path}: cannot be read as JSON: {err}") from err
    found = problems(name, value)
    if found:
        raise BadFile(f"{path} is not a valid {name} file: {found[0]}")
    return value
