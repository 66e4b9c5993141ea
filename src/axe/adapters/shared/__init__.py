"""What more than one adapter needs of the filesystem: where axe's files live, a safe read of
a regular file, TOML into values. Below the port packages; it knows none of them."""
