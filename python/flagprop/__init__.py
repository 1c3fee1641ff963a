"""flagprop's Python half: target loading, observation and verdicts.

Loaded by the flagprop C++ harness into its embedded interpreter; also
embedded, cut to what its case runs, into each standalone reproducer.

Modules, by what they do:

* the case engine: ``loader`` (source and installed mode), ``observe``
  (installer calls), ``session`` (P1-P4 cases), ``launch`` and
  ``real_launch`` (P3 / P4 drivers, on mocks and on a real FlagGems),
  ``ops`` (op inputs, calls and the reference), ``opinfo`` (OpInfo's
  samples), ``precompile`` (the pre-compile workers);
* the observers of single properties: ``streams`` (P7), ``hits`` (P8),
  ``timing`` (P9);
* judging: ``verdicts`` (every judgement) and ``checks`` (each property's
  observer paired with its verdict);
* reports: ``render`` (the Python report formats), ``htmlreport``,
  ``drafts``, ``plots``, ``diff``;
* tooling: ``slim`` (cuts the code a reproducer carries).
"""
