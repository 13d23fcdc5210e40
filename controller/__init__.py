"""The controller: runs, manifests, the state machine, agents, flows and the CLI."""
