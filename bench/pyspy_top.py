"""Where a flagprop run's time goes, from a py-spy profile.

Usage: python3 bench/pyspy_top.py PROFILE.txt [N]

PROFILE.txt is ``py-spy record --format raw`` output (one line per distinct
stack: frames separated by ``;``, then the sample count), for example of
``py-spy record -f raw -o PROFILE.txt --subprocesses -- ./build/flagprop run
...``. Prints the N (default 40) functions with the most samples, inclusive
(the function or anything it calls) and self (the function itself), as
percentages of all samples; samples with no Python frame (C++: RapidCheck,
the sandbox, JSON) are shown as ``(no Python frame)``. Exit status 2 when the
file holds no samples, cannot be read, or the arguments are wrong."""

import collections
import sys


def _name(frame):
    """``function (file:line)`` -> ``function (file)`` with the file's base name."""
    func, _, where = frame.partition(" (")
    if not where:
        return func
    where = where[:-1] if where.endswith(")") else where
    base = where.rsplit("/", 1)[-1]
    if ":" in base:  # py-spy's default; --nolineno leaves the line out
        base = base.rsplit(":", 1)[0]
    return "%s (%s)" % (func, base)


def top(path, n=40):
    """(total samples, [(inclusive share, name)], [(self share, name)]) of
    the profile at ``path``, the n largest of each."""
    inclusive, own, total = collections.Counter(), collections.Counter(), 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            k = int(count)
            total += k
            frames = [_name(x) for x in stack.split(";") if x and not x.startswith("process ")]
            if not frames or all(x.startswith("0x") for x in frames):
                frames = ["(no Python frame)"]
            own[frames[-1]] += k
            for name in set(frames):
                inclusive[name] += k

    def share(c):
        return [(v / total, name) for name, v in c.most_common(n)] if total else []

    return total, share(inclusive), share(own)


def main(argv):
    if len(argv) < 2 or len(argv) > 3 or (len(argv) == 3 and not argv[2].isdigit()):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        total, inc, own = top(argv[1], int(argv[2]) if len(argv) > 2 else 40)
    except (OSError, UnicodeDecodeError) as e:
        print("pyspy_top: cannot read %s: %s" % (argv[1], e.strerror if isinstance(e, OSError) else e), file=sys.stderr)
        return 2
    if not total:
        print("no samples in %s" % argv[1], file=sys.stderr)
        return 2
    print("%d samples" % total)
    for title, rows in (("inclusive", inc), ("self", own)):
        print("-- %s" % title)
        for s, name in rows:
            print("%5.1f%%  %s" % (100 * s, name[:140]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
