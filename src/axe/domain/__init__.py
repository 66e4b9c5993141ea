"""The pure core: memory entries, trim policy, agent values, the fixed prompt, error kinds.

Nothing here performs I/O or imports a third-party library other than attrs, so every rule
about memory files can be tested with plain bytes.
"""
