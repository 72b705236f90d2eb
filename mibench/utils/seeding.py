"""Seeds derived from a run's seed, so independent random streams never share one."""
from __future__ import annotations

import hashlib


def derived_seed(*parts) -> int:
    """A 63-bit seed derived from ``parts`` (SHA-256 of their ``/``-joined text): streams that must
    not depend on each other (a critic's initialisation, a sample dataset) get their own seeds."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF
