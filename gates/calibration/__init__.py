"""Contracts calibrated on a capture: each operator's baseline error against its FP64 oracle,
and the tolerance a candidate's error against that oracle must keep."""
