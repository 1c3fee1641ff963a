#!/usr/bin/env python3
"""Writes CTest's resource specification for this host's GPUs.

``ctest -L cuda -j N --resource-spec-file FILE`` then runs the device entries
(each declares ``RESOURCE_GROUPS "gpus:1"``) on every GPU at once, one entry
per GPU slot; ``matrix/ctest_device.sh`` shows each process only the GPU
ctest gave it. The file is CTest's format, version 1.0::

    {"version": {"major": 1, "minor": 0},
     "local": [{"gpus": [{"id": "0", "slots": 1}, {"id": "1", "slots": 1}]}]}

GPU ids are indices into what this host or job makes visible: 0..n-1, where
n is, in this order (``--kind auto`` tries cuda, then dcu):

* cuda: the entries of ``CUDA_VISIBLE_DEVICES`` when it is set; else the
  ``GPU n:`` lines of ``nvidia-smi -L``; else ``torch.cuda.device_count()``
  in ``--python`` (default: the first of $FLAGPROP_PYTHON, python3,
  /usr/bin/python3 that answers);
* dcu: the entries of ``HIP_VISIBLE_DEVICES`` when it is set; else the
  devices ``rocm-smi --showid`` (or ``hy-smi --showid``) lists; else
  ``torch_fl.flagos.device_count()`` in ``--python``.

``--count N`` skips the detection (a spec for N GPUs: on a host with more,
ctest uses the first N; on a GPU-less host it exercises the scheduling).
Zero GPUs gives a spec with none, and a note on stderr: with such a spec
ctest does not start the entries at all (not enough resources); run ctest
without ``--resource-spec-file`` there and they skip (exit 77).

Usage: matrix/resource_spec.py [-o FILE] [--count N] [--slots S]
                               [--kind auto|cuda|dcu] [--python PY]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys


def _visible(var):
    """The entries of the visibility variable ``var`` (CUDA_VISIBLE_DEVICES,
    HIP_VISIBLE_DEVICES) as a list, or None when it is not set. An empty
    value or one starting with -1 makes no device visible."""
    value = os.environ.get(var)
    if value is None:
        return None
    entries = [e.strip() for e in value.split(",") if e.strip()]
    if entries and entries[0].startswith("-1"):
        return []
    return entries


def _run(cmd, timeout=60):
    """stdout of ``cmd`` or None when it is missing, fails or times out."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def pythons(given):
    """The interpreters to ask, in order: ``given`` alone when set, else
    $FLAGPROP_PYTHON, python3 on PATH and /usr/bin/python3 (each once)."""
    if given:
        return [given]
    out = []
    for c in (os.environ.get("FLAGPROP_PYTHON"), shutil.which("python3"), "/usr/bin/python3"):
        if c and os.access(c, os.X_OK) and os.path.realpath(c) not in [os.path.realpath(o) for o in out]:
            out.append(c)
    return out


def _python_count(python, code):
    """(the integer ``code`` prints, the interpreter) from the first of
    ``pythons(python)`` where it works, or (None, None)."""
    for exe in pythons(python):
        try:
            p = subprocess.run([exe, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        try:
            if p.returncode == 0:
                return int(p.stdout.strip().splitlines()[-1]), exe
        except (ValueError, IndexError):
            continue
    return None, None


def count_cuda(python):
    """(NVIDIA GPUs visible to this host or job, how it was found), or
    (None, why not) when no method answers."""
    vis = _visible("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len(vis), "CUDA_VISIBLE_DEVICES=%s" % os.environ["CUDA_VISIBLE_DEVICES"]
    out = _run(["nvidia-smi", "-L"])
    if out is not None:
        return len(re.findall(r"^GPU \d+:", out, re.M)), "nvidia-smi -L"
    n, exe = _python_count(python, "import torch; print(torch.cuda.device_count() if torch.version.cuda else 0)")
    if n is not None:
        return n, "torch.cuda.device_count() in %s" % exe
    return None, "no nvidia-smi, and no Python with torch (%s)" % ", ".join(pythons(python))


def count_dcu(python):
    """(Hygon DCU / AMD GPUs visible to this host or job, how it was found),
    or (None, why not) when no method answers."""
    vis = _visible("HIP_VISIBLE_DEVICES")
    if vis is not None:
        return len(vis), "HIP_VISIBLE_DEVICES=%s" % os.environ["HIP_VISIBLE_DEVICES"]
    for tool in ("rocm-smi", "hy-smi"):
        out = _run([tool, "--showid"])
        if out is not None:  # one "GPU[n]" (hy-smi: "DCU[n]" / "HCU[n]") line per device and field
            return len(set(re.findall(r"^\s*[A-Z]+\[(\d+)\]", out, re.M))), tool + " --showid"
    n, exe = _python_count(python, "import torch_fl, torch_fl.flagos as f; print(f.device_count())")
    if n is not None:
        return n, "torch_fl.flagos.device_count() in %s" % exe
    return None, "no rocm-smi / hy-smi, and no Python with torch_fl (%s)" % ", ".join(pythons(python))


def spec(count, slots):
    """CTest's resource spec (a dict, version 1.0) for ``count`` GPUs with
    ``slots`` slots each, ids "0".."count-1"."""
    return {"version": {"major": 1, "minor": 0},
            "local": [{"gpus": [{"id": str(i), "slots": slots} for i in range(count)]}]}


def detect(kind, python):
    """(GPU count, how found) for ``kind`` (auto, cuda, dcu); the count is 0
    when no method finds a GPU."""
    tried = []
    for k, fn in (("cuda", count_cuda), ("dcu", count_dcu)):
        if kind not in ("auto", k):
            continue
        n, how = fn(python)
        if n:
            return n, how
        tried.append(how if n is None else "%s: 0" % how)
    return 0, "; ".join(tried)


def main(argv=None):
    """Writes the spec (to ``-o FILE`` or stdout) and says on stderr how many
    GPUs it lists and how they were found. Returns 0, or 2 on bad usage."""
    p = argparse.ArgumentParser(description="Write CTest's resource spec (gpus) for this host.")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--count", type=int, help="list this many GPUs instead of detecting them (testing)")
    p.add_argument("--slots", type=int, default=1, help="entries one GPU runs at once (default 1)")
    p.add_argument("--kind", choices=["auto", "cuda", "dcu"], default="auto", help="which GPUs to look for")
    p.add_argument("--python", help="Python with torch (or torch_fl) for the fallback count "
                                    "(default: the first of $FLAGPROP_PYTHON, python3, /usr/bin/python3 that answers)")
    a = p.parse_args(argv)
    if a.slots < 1 or (a.count is not None and a.count < 0):
        p.error("--slots must be >= 1 and --count >= 0")
    if a.count is not None:
        n, how = a.count, "--count"
    else:
        n, how = detect(a.kind, a.python)
    text = json.dumps(spec(n, a.slots), indent=2) + "\n"
    if a.output:
        os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    where = a.output or "stdout"
    if n:
        print("resource_spec: %d GPU(s), %d slot(s) each (%s) -> %s" % (n, a.slots, how, where), file=sys.stderr)
    else:
        print("resource_spec: no GPU found (%s); the spec lists none -> %s. With it ctest does not start the "
              "entries that need a GPU; on this host run ctest without --resource-spec-file and they skip (77)."
              % (how, where), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
