"""``mibench report DIR... -o SITE/``: the leaderboard of run / sweep directories as one static,
self-contained web page (tables with 95% intervals, figures, estimator descriptions, run metadata
and the commands that reproduce the results).

Light on import: :func:`write_site` imports pandas, matplotlib and Jinja2 only when called.
"""
from __future__ import annotations


def write_site(paths, out, **kwargs):
    """Write the page for ``paths`` into ``out``; see :func:`mibench.report.site.write_site`."""
    from mibench.report.site import write_site as _write_site

    return _write_site(paths, out, **kwargs)


__all__ = ["write_site"]
