"""Test fixture: an installer module whose body raises while loading."""

raise ImportError("this installer module cannot load")
