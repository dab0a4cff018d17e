"""Waiting between attempts: one exponential backoff, used by every retry in triagebot.

The wait before retry `n` (0 for the first) is `first * 2**n`, at most `cap`, then, with a
jitter fraction `j`, multiplied by a uniform draw in [1-j, 1+j] from an injected random source.
A caller that got a Retry-After answer honours it itself (it knows the answer); the sleeping is
the caller's injected `Sleeper`, so every backoff is tested without waiting.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

Sleeper = Callable[[float], None]


@dataclass(frozen=True)
class Backoff:
    first: float  # seconds before the first retry
    cap: float  # no wait (before jitter) is longer
    jitter: float = 0.0  # +-fraction drawn per wait; 0 = none

    def __post_init__(self) -> None:
        if self.first < 0 or self.cap < 0 or not 0 <= self.jitter < 1:
            raise ValueError(f"backoff needs first, cap >= 0 and 0 <= jitter < 1, not {self!r}")

    def delay(self, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` (0 = the first retry)."""
        wait = min(self.cap, self.first * 2 ** max(0, retry))
        if self.jitter:
            wait *= (rng or random).uniform(1 - self.jitter, 1 + self.jitter)
        return wait
