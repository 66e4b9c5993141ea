"""The pure core: no I/O, no third-party library but attrs."""
