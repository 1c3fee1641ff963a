"""The case engine: loading the code under test (``loader``: source and
installed mode), the installer cases P1-P4 (``session``) and the installer's
calls and their effects (``observe``), their drivers on mocks and on a real
FlagGems (``launch``, ``real_launch``), op inputs, calls and the reference
for P5 / P6 (``ops``), the facts of tensors and exceptions that the engine
acts on and the verdicts judge with (``facts``), OpInfo's samples
(``opinfo``, ``extra_samples``) and the pre-compile workers
(``precompile``). The lowest layer: it imports nothing of the other
subpackages.

Kept empty of imports: a reproducer embeds only the modules its case runs."""
