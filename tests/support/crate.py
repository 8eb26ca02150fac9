"""RO-Crate validation offline, with the validator of the RO-Crate community
(``roc-validator``).

The validator resolves the crate's JSON-LD context by URL, through its HTTP cache;
offline it reads that cache only. The context of RO-Crate 1.3 ships with ro-crate-py
(``rocrate/data/ro-crate.jsonld``, the document its ``@id`` names), so the test puts
that document into a fresh cache under its own URL, and the validator runs with
``offline=True``: nothing is fetched, and a crate that needs anything else fails.
"""

from __future__ import annotations

import importlib.resources
import io
import json
from pathlib import Path


def _seed_context(cache: Path) -> None:
    import requests
    import urllib3
    from rocrate_validator.utils.http import HttpRequester

    document = (importlib.resources.files("rocrate") / "data" / "ro-crate.jsonld").read_bytes()
    url = json.loads(document)["@id"]
    headers = {"Content-Type": "application/ld+json"}
    response = requests.Response()
    response.status_code, response.url, response.encoding = 200, url, "utf-8"
    response._content = document
    response.headers.update(headers)
    response.request = requests.Request("GET", url).prepare()
    response.raw = urllib3.HTTPResponse(
        body=io.BytesIO(document),
        headers=headers,
        status=200,
        preload_content=False,
        request_url=url,
    )
    HttpRequester().session.cache.save_response(response)


def validate_crate(crate_dir: Path, cache_dir: Path, profile: str = "ro-crate-1.3"):
    """Issues of the crate at ``crate_dir`` of severity REQUIRED, as (check, message)."""
    from rocrate_validator import models, services

    settings = services.ValidationSettings(
        rocrate_uri=str(crate_dir),
        profile_identifier=profile,
        requirement_severity=models.Severity.REQUIRED,
        offline=True,
        cache_path=cache_dir / "http",
    )
    _seed_context(cache_dir)
    result = services.validate(settings)
    return result.passed(), [issue.message for issue in result.get_issues()]
