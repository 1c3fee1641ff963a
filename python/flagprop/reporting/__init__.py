"""The report formats written in Python, each a renderer of report.json:
``render`` (the seam the harness calls, one function per format),
``htmlreport`` (report.html), ``drafts`` (bug-report drafts), ``plots``
(P9's figures) and ``diff`` (``flagprop diff``)."""
