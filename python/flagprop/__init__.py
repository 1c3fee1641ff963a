"""flagprop's Python half: target loading, observation and verdicts.

Loaded by the flagprop C++ harness into its embedded interpreter; also
embedded, cut to what its case runs, into each standalone reproducer. Modules:
``loader`` (source and installed mode), ``observe`` (installer calls),
``session`` (P1-P4 cases), ``launch`` (P3 / P4 drivers), ``ops`` (P5 / P6
inputs, calls and the CPU reference), ``verdicts`` (every judgement),
``checks`` (each property's observer paired with its verdict).
"""
