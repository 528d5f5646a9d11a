"""Stand-in for `lightning.pytorch` (see ../../README.md)."""
