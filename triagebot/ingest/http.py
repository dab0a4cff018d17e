"""Ingest stage: the real HTTP transport (requests) and polite fetching with backoff.

`fetch` retries connection failures, timeouts, 429, 5xx and answers that are not what was
asked for (an HTML challenge page instead of a feed), waiting `backoff_seconds * 2**n` with
+-50% jitter and honouring `Retry-After`, and logs each retry once as an event line.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping

from triagebot.ingest.protocol import HttpClient, HttpPolicy, HttpResponse, Sleeper, SourceError

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class RequestsClient:
    """HttpClient over one requests.Session (connection reuse, the operator's User-Agent)."""

    def __init__(self, policy: HttpPolicy, *, trust_environment: bool = True) -> None:
        import requests  # imported here: parsing and the store never need it

        self._requests = requests
        self._session = requests.Session()
        # Proxies from the environment apply to real servers; tests on 127.0.0.1 turn them off.
        self._session.trust_env = trust_environment
        self._session.headers.update({"User-Agent": policy.user_agent, **policy.extra_headers})

    def get(self, url: str, *, timeout: float, headers: Mapping[str, str] | None = None) -> HttpResponse:
        try:
            response = self._session.get(url, timeout=timeout, headers=dict(headers or {}))
        except self._requests.RequestException as error:
            raise SourceError(f"{url}: {type(error).__name__}: {error}") from error
        return HttpResponse(response.status_code, {name.lower(): value for name, value in response.headers.items()},
                            response.content, response.url)

    def close(self) -> None:
        self._session.close()


def _retry_after(response: HttpResponse) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def fetch(client: HttpClient, url: str, policy: HttpPolicy, *, sleep: Sleeper = time.sleep,
          accept: Callable[[HttpResponse], str | None] | None = None, events: list[str] | None = None,
          rng: random.Random | None = None) -> HttpResponse:
    """GET `url` until it answers 200 with an acceptable body, or raise SourceError.

    `accept` returns None for a good answer or a reason it is not ("an HTML page, not a feed");
    a 404 is returned at once (the caller decides what a missing page means).
    """
    rng = rng or random.Random()
    last_problem = "no attempt made"
    for attempt in range(policy.attempts):
        try:
            response = client.get(url, timeout=policy.timeout_seconds)
        except SourceError as error:
            last_problem = str(error)
            response = None
        if response is not None:
            if response.status == 404:
                return response
            if response.status == 200:
                reason = accept(response) if accept else None
                if reason is None:
                    return response
                last_problem = f"{url}: {reason}"
            elif response.status in RETRY_STATUSES:
                last_problem = f"{url}: HTTP {response.status}"
            else:
                raise SourceError(f"{url}: HTTP {response.status}")
        if attempt + 1 == policy.attempts:
            break
        wait = min(policy.backoff_max_seconds, policy.backoff_seconds * 2 ** attempt) * rng.uniform(0.5, 1.5)
        if response is not None and (retry_after := _retry_after(response)) is not None:
            wait = min(policy.backoff_max_seconds, max(wait, retry_after))
        if events is not None:
            events.append(f"{last_problem}; retrying in {wait:.1f} s (attempt {attempt + 2} of {policy.attempts})")
        sleep(wait)
    raise SourceError(f"{last_problem} (gave up after {policy.attempts} attempts)")
