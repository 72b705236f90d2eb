"""Foundations every layer may use; each module imports nothing of mibench but :mod:`mibench.errors`.

* :mod:`.registry` -- the one registry pattern (names, aliases, families, "did you mean");
* :mod:`.checks` -- input validation at the boundaries (arrays, integers, seeds, config fields);
* :mod:`.units` -- nats and bits;
* :mod:`.seeding` -- seeds derived from a run's seed;
* :mod:`.device` -- the torch device (``--device``);
* :mod:`.allocator` -- the CPU allocator setting of mibench's own processes;
* :mod:`.threads` -- how many torch threads a run takes (the cores free to it).
"""
