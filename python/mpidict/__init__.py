"""mpidict from Python.  Today: mpidict.checkpoint, a numpy reader of the
checkpoints every mpidict container saves (docs/checkpoint.md)."""
