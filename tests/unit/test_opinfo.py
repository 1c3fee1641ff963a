"""Tests of flagprop.engine.opinfo's bank builder: its batches run in
forked children, several at once.

Run from this folder: python3 -B -m unittest -v test_opinfo.
"""

import os
import sys
import time
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))

from flagprop.engine import opinfo  # noqa: E402


class OpInfo(unittest.TestCase):

    def test_batch_children_answer_in_order_and_a_dead_one_is_none(self):
        """The results come back in the order asked whatever order the
        children end in, a child that dies is None (its batch is then run
        entry by entry), a result larger than a pipe's buffer arrives whole,
        and $FLAGPROP_OPINFO_WORKERS sets how many run at once."""

        def slow(k):
            def fn():
                time.sleep(0.01 * (5 - k))  # the first asked ends last; no wait is counted on
                return {"k": k, "pad": "x" * (200000 if k == 2 else 1)}
            return fn

        def dies():
            os.kill(os.getpid(), 9)

        got = opinfo._in_children([slow(0), slow(1), dies, slow(2), slow(3)], 3)
        order_ok = [g["k"] if g else None for g in got] == [0, 1, None, 2, 3] and len(got[3]["pad"]) == 200000
        one = opinfo._in_children([slow(0), slow(1)], 1) == [{"k": 0, "pad": "x"}, {"k": 1, "pad": "x"}]
        saved = os.environ.get("FLAGPROP_OPINFO_WORKERS")
        try:
            os.environ["FLAGPROP_OPINFO_WORKERS"] = "7"
            seven = opinfo.build_workers() == 7
            os.environ["FLAGPROP_OPINFO_WORKERS"] = "none"
            fallback = opinfo.build_workers() >= 1
        finally:
            if saved is None:
                os.environ.pop("FLAGPROP_OPINFO_WORKERS", None)
            else:
                os.environ["FLAGPROP_OPINFO_WORKERS"] = saved
        self.assertTrue(order_ok)
        self.assertTrue(one)
        self.assertTrue(seven)
        self.assertTrue(fallback)

    def test_a_cache_folder_that_cannot_be_written_moves_the_bank_to_the_temporary_directory(self):
        """Checks: a bank path whose folder cannot be made (under /proc,
        which not even root can write) is moved to this user's folder under
        the temporary directory, same file name; a writable one is kept."""
        import tempfile
        moved = opinfo.writable_bank_path("/proc/self/flagprop-cache/flagprop/opinfo-x.json")
        self.assertEqual(os.path.basename(moved), "opinfo-x.json")
        self.assertEqual(os.path.dirname(moved), os.path.join(tempfile.gettempdir(), "flagprop-opinfo-%d" % os.getuid()))
        self.assertTrue(os.path.isdir(os.path.dirname(moved)))
        with tempfile.TemporaryDirectory() as d:
            kept = os.path.join(d, "flagprop", "opinfo-y.json")
            self.assertEqual(opinfo.writable_bank_path(kept), kept)


if __name__ == "__main__":
    unittest.main()
