"""The use case (``collect_garbage``) and the ports it needs from the outside world."""
