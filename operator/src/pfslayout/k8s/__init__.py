"""Thin Kubernetes API I/O helpers (dict in, dict out)."""
