"""Adapters: one technology each (files, HTTP, console, the built-in analyst).

Only :mod:`axe.composition` imports from here; each adapter turns its library's exceptions
into :mod:`axe.domain.errors` so nothing above sees ``OSError`` or ``httpx`` errors.
"""
