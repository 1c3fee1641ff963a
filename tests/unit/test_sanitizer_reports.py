"""Tests of tools/sanitizer_reports.sh, the step of tools/sanitize.sh that
fails the sanitizer build on a report written by any process the tests
started (a run-target child's report would otherwise read as its op's
failure).

Run from this folder: python3 -B -m unittest -v test_sanitizer_reports.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get("FLAGPROP_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "sanitizer_reports.sh")

# A parent that starts itself as a child; the child reads freed memory.
# Only the child is at fault, as a run-target process would be.
CHILD_FAULT = r"""
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char** argv) {
  if (argc > 1) {
    char* p = static_cast<char*>(std::malloc(8));
    std::free(p);
    return p[3];
  }
  pid_t pid = fork();
  if (pid == 0) { execl(argv[0], argv[0], "child", nullptr); _exit(127); }
  int status = 0;
  waitpid(pid, &status, 0);
  return 0;  // the parent ends well whatever its child did
}
"""


def scan(folder):
    return subprocess.run(["bash", SCRIPT, folder], capture_output=True, text=True, timeout=60)


class SanitizerReports(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flagprop-sanitizer-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_no_report_passes_and_a_missing_folder_is_an_error(self):
        self.assertEqual(scan(self.dir).returncode, 0)
        missing = scan(os.path.join(self.dir, "absent"))
        self.assertEqual(missing.returncode, 2)
        self.assertIn("is not a folder", missing.stderr)

    def test_a_report_of_a_child_process_fails_the_scan(self):
        """A real AddressSanitizer build: a child's report reaches the
        folder through log_path even though its parent exits 0."""
        cxx = shutil.which("g++") or shutil.which("c++")
        if not cxx:
            self.skipTest("no C++ compiler")
        src = os.path.join(self.dir, "child_fault.cpp")
        exe = os.path.join(self.dir, "child_fault")
        with open(src, "w") as f:
            f.write(CHILD_FAULT)
        subprocess.run([cxx, "-fsanitize=address", "-g", src, "-o", exe], check=True, timeout=120)
        reports = os.path.join(self.dir, "reports")
        os.mkdir(reports)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:log_path=" + os.path.join(reports, "asan"))
        self.assertEqual(subprocess.run([exe], env=env, timeout=60).returncode, 0)
        found = scan(reports)
        self.assertEqual(found.returncode, 1, found.stdout + found.stderr)
        self.assertIn("heap-use-after-free", found.stdout)
        self.assertIn("1 process(es) wrote a sanitizer report", found.stderr)


if __name__ == "__main__":
    unittest.main()
