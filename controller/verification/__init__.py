"""`controller verify`: a kernel profile held to the model's own numerics and timed end to end."""
