"""Fences that every agent session and agent command runs inside (stdlib and docker SDK only)."""
