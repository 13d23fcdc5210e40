"""Installed tuned-kernel profiles: `tuned/<profile>/profile.json` and one folder per operator."""
