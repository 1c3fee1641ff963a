"""Tooling: ``slim`` cuts flagprop's Python modules down to the code a
standalone reproducer runs (a script the harness starts; stdlib only)."""
