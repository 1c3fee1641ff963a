// Child processes (runner/runner.h): a child that cannot be started is an
// error the supervisor reports, never the end of the run.
#include "runner/runner.h"

#include <gtest/gtest.h>

#include "core/files.h"

#include <csignal>
#include <cstdio>
#include <filesystem>

namespace flagprop {
namespace {

// A binary that is gone (removed mid-run) with a key to hand over through a
// pipe: the key is not written into a pipe nobody reads (SIGPIPE used to end
// the whole run, exit 141, no report); the result says why it did not start,
// and the document collected for it is a target error that says so.
TEST(Children, AChildThatCannotStartIsAnErrorNotTheEndOfTheRun) {
  struct sigaction old {};
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, &old);  // as a plain process has it: a write to a closed pipe kills it
  ChildSpec spec;
  spec.argv = {"/nonexistent/flagprop", "run-target"};
  spec.secret = std::string(64, 'a');
  const auto results = runChildren({spec}, 10);
  sigaction(SIGPIPE, &old, nullptr);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].exitCode, -1);
  EXPECT_EQ(results[0].spawnError, "No such file or directory");
  const json doc = collectChildDocument("/nonexistent/out.json", "/m/target.json", results[0], 60, "key");
  EXPECT_EQ(doc.value("status", ""), "error");
  EXPECT_EQ(doc.value("error", ""), "cannot start the target process (No such file or directory)");
  EXPECT_FALSE(doc.contains("crash")) << "not a crash to restart after";
}

// A console frame of number `seq` under `key` whose MAC is that of
// `macText` (the text it carries, `text`, may differ: an altered frame).
std::string frameOf(const std::string& key, uint64_t seq, char kind, const std::string& text,
                    const std::string& macText) {
  char number[20];
  std::snprintf(number, sizeof number, "%016llx", static_cast<unsigned long long>(seq));
  return "\n" + std::string(number) + consoleMac(key, seq, kind, macText) + kind + text + "\n";
}

// Runs `command` (sh -c) as a child with a console under `key` and its
// capture at `capture`; what it relayed to stdout. Fails the test unless
// the child exits 0.
std::string relayed(const std::string& command, const std::string& key, const std::string& capture) {
  std::filesystem::remove(capture);
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", command};
  spec.capturePath = capture;
  spec.secret = key;
  ::testing::internal::CaptureStdout();
  const auto results = runChildren({spec}, 60);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(results.at(0).exitCode, 0);
  return out;
}

// What a child writes to its console descriptor (fd 3) reaches this
// process's stdout only as frames whose MAC checks under the child's key and
// whose number is past the last one taken: a frame sent again (read off the
// pipe by the code under test, which can open /proc/self/fd/3 for reading)
// and a frame with its text changed go to the capture file, as do plain
// lines; control bytes in a frame's text reach the terminal as '?'.
TEST(Children, OnlyFreshFramesUnderTheKeyReachTheConsole) {
  const std::string key(64, 'k');
  const auto frame = [&](uint64_t seq, char kind, const std::string& text, const std::string& macText) {
    return frameOf(key, seq, kind, text, macText);
  };
  const std::string stream = frame(1, 'L', "first \x1b[2Jline", "first \x1b[2Jline") + "plain line\n" +
                             frame(1, 'L', "first \x1b[2Jline", "first \x1b[2Jline") +  // sent again
                             frame(2, 'L', "forged text", "genuine text") +             // text changed
                             frame(3, 'L', "third line", "third line");
  const std::string dir = ::testing::TempDir() + "/flagprop-children-frames";
  std::filesystem::create_directories(dir);
  const std::string data = dir + "/stream", capture = dir + "/capture";
  writeText(data, stream);
  EXPECT_EQ(relayed("cat '" + data + "' >&3", key, capture), "first ?[2Jline\nthird line\n");
  const std::string captured = readFile(capture);
  EXPECT_NE(captured.find("descriptor: plain line"), std::string::npos) << captured;
  EXPECT_NE(captured.find("Lforged text"), std::string::npos) << captured;
  EXPECT_EQ(captured.find("third line"), std::string::npos) << captured;
  size_t resent = 0;
  for (size_t at = 0; (at = captured.find("first ?[2Jline", at)) != std::string::npos; ++at) ++resent;
  EXPECT_EQ(resent, 1u) << captured;
  removeTree(dir);
}

// A child that fills an enlarged console pipe and ends at once: all of it
// is read after it ended (it used to be one look, 64 KiB, the rest lost),
// its last frame relayed and every plain line captured.
TEST(Children, AConsoleFloodedBeforeTheEndIsReadToTheEnd) {
  const std::string key(64, 'q');
  const std::string last = frameOf(key, 1, 'L', "the last line", "the last line");
  const std::string dir = ::testing::TempDir() + "/flagprop-children-flood";
  std::filesystem::create_directories(dir);
  const std::string script = dir + "/flood.py", frame = dir + "/frame", capture = dir + "/capture";
  writeText(frame, last);
  writeText(script,
            "import fcntl, os, sys\n"
            "try:\n    fcntl.fcntl(3, 1031, 1 << 20)  # F_SETPIPE_SZ\nexcept OSError:\n    pass\n"
            "data = b'x' * 99 + b'\\n'\n"
            "for _ in range(9000):\n    os.write(3, data)\n"
            "os.write(3, open(sys.argv[1], 'rb').read())\n");
  EXPECT_EQ(relayed("exec python3 '" + script + "' '" + frame + "'", key, capture), "the last line\n");
  const std::string captured = readFile(capture);
  size_t lines = 0;
  for (const char c : captured) lines += c == '\n';
  EXPECT_EQ(lines, 9000u);
  removeTree(dir);
}

}  // namespace
}  // namespace flagprop
