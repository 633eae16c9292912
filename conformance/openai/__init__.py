"""Planners behind an OpenAI-compatible server: the driver (``driver``), its prompt and strict schema
(``prompt``, ``schema``), the scriptable fake (``fake``) and the reference planner served over HTTP
(``serve``). The driver needs ``httpx`` and the servers ``starlette`` and ``uvicorn`` (the ``openai``
and ``serve`` extras); nothing here is imported by the rest of the kit unless asked for."""
