"""flagprop's Python half: target loading, observation and verdicts.

Loaded by the flagprop C++ harness into its embedded interpreter; also
embedded, cut to what its case runs, into each standalone reproducer.

Subpackages, by what they do (each one's ``__init__`` lists its modules),
lowest layer first: a module imports only from its own subpackage and the
ones above it in this list (tests/unit/test_python_layers.py checks it).

* ``engine``: the case engine (loading targets, installer cases and the
  installer's calls, op inputs, calls and the reference, the facts both
  the engine and the verdicts read, OpInfo's samples, pre-compiling);
* ``observers``: what P7-P9 observe (streams, fast-path hits, timing);
* ``judging``: every judgement (``verdicts``) and each property's observer
  paired with its verdict (``checks``);
* ``reporting``: the Python report formats (HTML, drafts, plots, diff);
* ``tools``: ``slim``, which cuts the code a reproducer carries.

The package and its subpackages import nothing at import time: a
reproducer embeds only the modules its case runs.
"""
