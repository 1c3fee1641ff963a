"""flagprop's Python half: target loading, observation and verdicts.

Loaded by the flagprop C++ harness into its embedded interpreter; also
embedded, cut to what its case runs, into each standalone reproducer.

Subpackages, by what they do (each one's ``__init__`` lists its modules):

* ``engine``: the case engine (loading targets, installer cases, op inputs,
  calls and the reference, OpInfo's samples, pre-compiling);
* ``observers``: what single properties observe (installer calls, streams,
  fast-path hits, timing);
* ``judging``: every judgement (``verdicts``) and each property's observer
  paired with its verdict (``checks``);
* ``reporting``: the Python report formats (HTML, drafts, plots, diff);
* ``tools``: ``slim``, which cuts the code a reproducer carries.

The package and its subpackages import nothing at import time: a
reproducer embeds only the modules its case runs.
"""
