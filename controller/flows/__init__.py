"""Flows: what a run asks of its agent and how its gates judge and publish the result."""
