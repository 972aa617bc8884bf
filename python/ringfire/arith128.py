"""Placeholder replaced by the 128-bit arithmetic module."""
