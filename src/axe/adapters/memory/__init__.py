"""The memory file: read, locked, replaced by its kept tail (crash- and race-safe), archived."""
