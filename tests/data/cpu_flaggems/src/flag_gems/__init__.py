"""Test fixture: the smallest importable stand-in for a FlagGems checkout
(flagprop's own code), for the paths a real FlagGems takes on a CPU host."""
