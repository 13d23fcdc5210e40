"""`controller optimize`: the model-level loop (profile, capture, tune, install, verify, keep or
drop each kernel) as one resumable batch."""
