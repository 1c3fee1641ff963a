"""The report formats flagprop writes in Python: renderers of a report
folder's report.json, as the C++ ones are (reports/renderers.cpp lists
every format and runs this file for the ones named here).

Run as a script by flagprop, in a plain interpreter (``python3 -I -B``):
``render.py REPORT_DIR FOLDERS NAME...``, FOLDERS being flagprop's Python
folders one a line (put first on ``sys.path``), NAME one of ``RENDERERS``.
Prints the paths written, one a line; exits 1 with the error's last line
on stderr when a renderer fails, 2 on an unknown name.
"""

import os
import sys

# Run as a script, this file's folder may lead sys.path (Python before 3.11,
# or without -I): its modules must not stand in for top-level ones.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]


def _html(report_dir):
    from flagprop.reporting import htmlreport

    return [htmlreport.write(report_dir)]


def _drafts(report_dir):
    from flagprop.reporting import drafts

    return drafts.write(report_dir)


# name -> renderer(report_dir) -> the paths it wrote. A new Python format is
# one entry here and one in reports/renderers.cpp's reportFormats().
RENDERERS = {"html": _html, "drafts": _drafts}


def main(argv):
    if len(argv) < 3:
        print("usage: render.py REPORT_DIR FOLDERS NAME...", file=sys.stderr)
        return 2
    report_dir, folders, names = argv[0], argv[1], argv[2:]
    sys.path[:0] = [f for f in folders.split("\n") if f]
    unknown = [n for n in names if n not in RENDERERS]
    if unknown:
        print("unknown report format(s): %s (known: %s)" % (", ".join(unknown), ", ".join(RENDERERS)), file=sys.stderr)
        return 2
    for name in names:
        for path in RENDERERS[name](report_dir):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
