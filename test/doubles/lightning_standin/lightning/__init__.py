"""Stand-in for the `lightning` package (see ../README.md)."""
