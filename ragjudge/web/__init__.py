"""``ragjudge serve``: annotators judge in a web page; one process serves them all.

- :mod:`ragjudge.web.app` builds the ASGI application (FastAPI) from its settings;
- :mod:`ragjudge.web.pages` are the HTML pages (Jinja2 templates in ``templates/``, one script
  and one stylesheet of our own in ``static/``, no build step, nothing from another host);
- :mod:`ragjudge.web.api` is the JSON API under ``/api/v1`` (OpenAPI at ``/openapi.json``);
- :mod:`ragjudge.web.identity` and :mod:`ragjudge.web.auth`: sessions, tokens, rate limits;
- :mod:`ragjudge.web.idempotency`: each action once, however often it is sent;
- :mod:`ragjudge.web.guard`: Host and Origin checks, body size, security headers, access log;
- :mod:`ragjudge.web.terminal`: the lead's terminal (the Textual app over textual-serve);
- :mod:`ragjudge.web.backend`: the only package that calls ragjudge's services;
- :mod:`ragjudge.web.server`: uvicorn, and stopping within a second or two.

Everything here needs the ``serve`` extra (``pip install 'ragjudge[serve]'``).
"""
