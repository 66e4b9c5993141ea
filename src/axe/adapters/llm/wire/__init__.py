"""One module per wire format: its request, its reply, its errors (``base.WireFormat``).

A provider of the catalogue names the format it speaks (``catalogue.WireModule``), which is
imported on its first request; adding a provider that speaks a format already here is one
row of ``catalogue.py``.
"""
