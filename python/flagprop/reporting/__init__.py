"""The Python report side: renderers of report.json (``render``, the seam
the harness calls, one function per format; ``htmlreport``: report.html;
``drafts``: bug-report drafts), ``plots`` (P9's figures, drawn from a
result's timing during the run) and ``diff`` (``flagprop diff``: two reports
compared)."""
