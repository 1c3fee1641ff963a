"""The case engine: loading the code under test (``loader``: source and
installed mode), the installer cases P1-P4 (``session``), their drivers on
mocks and on a real FlagGems (``launch``, ``real_launch``), op inputs, calls
and the reference for P5 / P6 (``ops``), OpInfo's samples (``opinfo``,
``extra_samples``) and the pre-compile workers (``precompile``).

Kept empty of imports: a reproducer embeds only the modules its case runs."""
