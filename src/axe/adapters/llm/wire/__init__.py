"""One module per wire format: its request, its reply, its errors (``base.WireFormat``).
Adding a provider that speaks a format already here is one row of ``catalogue.py``.
"""
