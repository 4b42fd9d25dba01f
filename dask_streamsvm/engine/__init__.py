"""The engine: one door (``fit.py``, asking ``choice.py`` once) before rooms by concern: ``plan/``,
``data/``, ``dual/``, ``primal/``, ``store/``, ``models/`` and ``cluster/`` (docs/design.md)."""
