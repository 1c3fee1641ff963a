"""flagprop's Python half: mocks, target loading and observation.

Loaded by the flagprop C++ harness into its embedded interpreter; also
embedded verbatim into every standalone reproducer it writes.
"""
