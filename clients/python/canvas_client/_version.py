"""The package version (read by the build backend too)."""

__version__ = "0.1.0"
