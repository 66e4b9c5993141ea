"""Adapters, one package per port (architecture.md, "The ports"); only :mod:`axe.composition`
imports them."""
