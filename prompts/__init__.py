"""Prompt templates for each agent role (data files beside this module)."""
