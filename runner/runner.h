// Running targets: one target's property runs as GoogleTest tests in this
// process, or each target in a child process of its own.
#pragma once

#include "suites/registry.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace flagprop {

/// Options of one target run.
struct TargetRunOptions {
  RunOptions run;
  Selection selection;
  /// Run even where a pinned hash or version does not match; every result
  /// is then marked `unverified` (see TargetSession).
  bool unverified = false;
  /// A document an earlier process of this target wrote before it died:
  /// its results are kept and their run keys are not run again; an op
  /// property whose op and dtype crashed there (observations.crash) is
  /// recorded as the same crash instead of being run. Empty: a fresh run.
  std::string resumeFrom;
  /// Where the target document is written once the runs are planned (before
  /// any runs), so that a process that dies in its first run leaves a
  /// document to resume from. Empty: not written.
  std::string docPath;
  /// When a run loses the device (illegal memory access, launch failure),
  /// end the process with kDeviceLostExit after recording it, so that a
  /// parent starts a fresh one for the runs left (run-target does).
  bool exitOnDeviceLost = false;
  /// Print a line per property run to stdout (run-target without a parent
  /// capturing its output, or --verbose).
  bool verbose = true;
  /// When >= 0, a console descriptor (see consoleMac): a progress line
  /// (target, run, cases done, elapsed s) is rewritten on it in place as
  /// cases run, as 'P' frames under progressKey.
  int progressFd = -1;
  std::string progressKey;
  /// Worker processes that compile the op runs' kernels before the first
  /// case (runner/precompile.h; the report's `precompile`); 0: none. Not
  /// used by a resumed process (resumeFrom set).
  int precompileWorkers = 0;
  /// One pre-compile call's time limit in s (the run's --case-timeout); 0: none.
  int precompileCaseSeconds = 300;
  /// The workers' wall-time limit in s: a quarter of the target process's
  /// own limit, so that a hanging call leaves the runs their time.
  int precompileSeconds = 3600;
  /// The key every document this process writes is authenticated with
  /// (writeTargetDocument; a parent's secret, see ChildSpec::secret); a
  /// resumeFrom document must carry it too. Empty: none.
  std::string docKey;
  /// The example database (runner/example_db.h): each run first judges the
  /// examples stored for its run key, and the files of those that pass now
  /// (or that the reference now rejects) are removed. Empty: none.
  std::string exampleDb;
  /// Where the processes of one target under --jobs claim its ops (claimOp):
  /// each process plans every op of the selection, takes them costliest
  /// family first (opCostRank) and runs an op only once it holds its claim,
  /// so that a process that finishes early takes the next op instead of
  /// idling while another works through a fixed share. Empty: every planned
  /// run is this process's.
  std::string claimDir;
  /// This process's shard (0 .. shardCount - 1) of its target's --jobs: its
  /// claims are its own across restarts, and its --precompile workers take
  /// the ops whose index in the plan is shardIndex modulo shardCount.
  int shardIndex = 0;
  int shardCount = 1;
  /// Under --jobs (claimDir set): at most this many of the target's
  /// processes at once run the ops that autotune heavily
  /// (opAutotunesHeavily), each holding a HeavySlot in claimDir for its
  /// op's runs. A process that finds every slot held leaves such an op
  /// unclaimed and goes on with the next; once its other runs are done it
  /// comes back to the ops it left that no process has claimed, waiting for
  /// a slot. 0: no cap (--heavy-jobs).
  int heavySlots = 0;
  /// Coverage before depth (a run under --budget): every run of this
  /// process first judges its explicit and generated cases with shrinking,
  /// distinct failures and replays off (a failure is kept unshrunk, marked
  /// observations.first_pass); once every run has had that first pass, each
  /// run that failed runs again with `run`'s own settings and the same seed
  /// (the same cases, then shrinking and replays), its result replacing the
  /// first. Where the budget ends before that, the first result stands.
  bool firstPass = false;
  /// A failure to confirm in this fresh process instead of the runs
  /// (tools/confirm.h): a JSON file {"key": run key, "case": its case,
  /// "prefix": [{"key", "case"}, ...]}; the prefix's calls are judged
  /// first (their verdicts ignored), then the case once, and the document
  /// gets "confirm" (confirmInProcess). Empty: a normal run.
  std::string confirmFile;
};

/// Judges `ask` ({"key", "case", "prefix"}; TargetRunOptions::confirmFile)
/// with `runs`' judges, in order, in this process: {"judged": true,
/// "failed": bool, "why": the verdict's reason}, or {"judged": false,
/// "why"} when the key names no run or the harness could not judge it.
json confirmInProcess(const std::vector<PropertyRun>& runs, const json& ask);

/// Claims op `op` in folder `dir` (created when missing) for shard `shard`:
/// true when the claim is `shard`'s (made now, or made earlier by the same
/// shard: a process resumed after a crash goes on with its ops), false when
/// another shard holds it. The claim is a file of its own created with
/// O_EXCL (the op's name with bytes other than [A-Za-z0-9._-] as %XX),
/// holding the shard's index. Throws FileError when `dir` cannot be made or
/// written.
bool claimOp(const std::string& dir, const std::string& op, int shard);

/// The shard that holds op `op`'s claim in folder `dir` (claimOp), or -1
/// when no shard has claimed it. No throw.
int claimHolder(const std::string& dir, const std::string& op);

/// One of the `count` slots in a claims folder (files `.heavy-slot-K`, K <
/// count) that let at most `count` processes of one target's --jobs run
/// the ops that autotune heavily at once (TargetRunOptions::heavySlots). A
/// slot is a POSIX write lock (fcntl F_SETLK) on its whole file: the kernel
/// frees it when its holder ends, crash included, and a child the code
/// under test forks does not inherit it (an flock would outlive the op in
/// such a child). The lock is the process's: use one HeavySlot per process.
/// Not copyable; the destructor releases.
class HeavySlot {
 public:
  HeavySlot() = default;
  ~HeavySlot();
  HeavySlot(const HeavySlot&) = delete;
  HeavySlot& operator=(const HeavySlot&) = delete;

  /// Takes a free slot of the `count` in `dir` without waiting (releasing
  /// the one held first); returns its index, or -1 when all are held.
  /// Throws FileError when `dir` cannot be made or a slot file not opened.
  int tryTake(const std::string& dir, int count);
  /// As tryTake, but waits (looking again every 50 ms) until a slot is free.
  int take(const std::string& dir, int count);
  /// Frees the slot held, if any.
  void release();
  /// The index of the slot held, or -1.
  int held() const { return index_; }

 private:
  int fd_ = -1;
  int index_ = -1;
};

/// Writes a target document to `path` (writeText) with `mac`, the
/// HMAC-SHA256 under `key` of its text without `mac` (no `mac` when `key` is
/// empty), so that a parent can tell a document its target process wrote
/// from one the code under test rewrote. Throws FileError.
void writeTargetDocument(const std::string& path, json doc, const std::string& key);

/// Whether `doc` carries the `mac` writeTargetDocument gives it under `key`
/// (true when `key` is empty); `mac` is removed from `doc` either way.
bool takeDocumentMac(json& doc, const std::string& key);

/// Holds a finished target document to the run keys its process was
/// launched for (`planned`, from plannedKeys): a result of a key not planned
/// (or a second one of a key) is dropped, a planned key without a result gets
/// an `error` result saying so; both are listed in `plan_mismatch`
/// ({"missing": [...], "unexpected": [...]}). `why` is the missing
/// results' reason (the default: the process finished without them).
/// Returns whether it matched.
bool checkAgainstPlan(json& doc, const std::vector<std::string>& planned, const std::string& why = "");

/// run-target's exit status after a run lost the device: the parent resumes
/// the target in a fresh process.
constexpr int kDeviceLostExit = 75;

/// Called after each property run with the session, the outcome and the
/// target document holding every result so far (e.g. to write a reproducer
/// and the document, so a crash loses little besides the property in flight).
using ResultSink = std::function<void(const TargetSession&, const PropertyOutcome&, json& doc)>;

/// Runs one target: loads and checks it, plans its property runs and runs
/// each as a (silent) GoogleTest test that passes when the result is what
/// the manifest expects. Returns the target document:
/// `name`, `manifest`, `status` (ok | error), `error` (one line),
/// `description`, `labels`, `expect`, `target` (Target::toJson),
/// `provenance`, `results[]` (PropertyOutcome::toJson) and `complete` (true).
/// A bad manifest, a hash mismatch or a missing device is status `error`.
json runTarget(const std::string& manifest, const TargetRunOptions& opts, const ResultSink& sink);

/// How a child process ended.
struct ChildResult {
  int exitCode = -1;
  int signal = 0;
  bool timedOut = false;
  bool caseTimedOut = false;       ///< one case outran the per-case limit (a hang), not the whole process
  bool referenceTimedOut = false;  ///< ... in its CPU reference stage (CaseWatch::referenceSeconds)
  /// ... in the op's own stage, still compiling when it was stopped: past its
  /// limit a case that keeps ending Triton compilations (one within the last
  /// min(kStillCompilingSeconds, limit / 4) s) is given up to the limit again;
  /// one that stops compiling for that long first is stopped as a hang.
  bool stillCompiling = false;
  int referenceSeconds = 0;  ///< that stage's limit in s, when referenceTimedOut
  bool stopped = false;      ///< killed because stopRequested() (Ctrl-C, SIGTERM)
  /// Why the process could not be started (strerror of posix_spawn's or
  /// pipe2's error: ENOENT for a binary removed mid-run, EMFILE, EAGAIN);
  /// empty: it started.
  std::string spawnError;
};

/// A child's per-case watch: `inflightPath` holds the case in flight (the
/// child empties it between cases); a case in flight longer than
/// `caseSeconds` ends the child (ChildResult::caseTimedOut). Where
/// `stagePath` is given (flagprop.engine.ops._stage's file), a case whose stage has
/// been `reference` (CPU ATen computing the reference, which has no compile
/// to wait for) longer than `referenceSeconds` ends it too.
struct CaseWatch {
  std::string inflightPath;
  int caseSeconds = 0;  ///< 0: no per-case limit
  std::string stagePath;
  int referenceSeconds = 0;  ///< 0: no limit of its own for the reference stage
};

/// What the case in flight of a target process is doing, from its stage
/// file (flagprop.engine.ops._stage, $FLAGPROP_STAGE_FILE): "reference" (CPU ATen),
/// "control" (the stock path, FlagGems off), "device" (the op under test),
/// or "" (another part of the case, no file, or a path of "").
std::string readStage(const std::string& path);

/// Seconds since the case in flight last finished a Triton compilation or
/// an autotuner's benchmark of one config (flagprop.engine.ops._compiled_now
/// stamps the stage file after each one, on the
/// monotonic clock that std::chrono::steady_clock reads on Linux), or -1:
/// no stamp this case (nothing compiled, no file, or a stamp more than
/// kStampSlackSeconds ahead of now: not this clock's). A stamp up to that far
/// ahead reads as 0 (its text was rounded up). A case past its time limit
/// that compiled a moment ago is still compiling or autotuning.
double stageCompileAge(const std::string& path);

/// How far ahead of the reader's clock a compile stamp may be and still
/// count as just written, s (the stamp's text is rounded).
constexpr double kStampSlackSeconds = 1.0;

/// How recent (s; at most a quarter of the case limit) a case's last Triton
/// compilation must be for it to count as still compiling
/// (ChildResult::stillCompiling): slow, not hung, a health skip.
constexpr int kStillCompilingSeconds = 60;

/// The still-compiling window for a case limit of `limitSeconds` s:
/// min(kStillCompilingSeconds, limitSeconds / 4), s. The one rule the watch
/// (runChildren) applies and the skip's reason states.
constexpr int stillCompilingWindow(int limitSeconds) {
  return limitSeconds / 4 < kStillCompilingSeconds ? limitSeconds / 4 : kStillCompilingSeconds;
}

/// The limit of one case's CPU reference stage, s: CPU ATen on flagprop's
/// inputs (at most 131072 elements per tensor) takes milliseconds, so a
/// minute is a hang (e.g. LAPACK on inf input), not a slow case.
constexpr int kReferenceStageSeconds = 60;

/// Asks every runChild in this process to stop its child (a signal handler
/// may call it: it only sets a flag).
void requestStop();
/// Whether requestStop() was called.
bool stopRequested();

/// Runs `argv` (argv[0] an executable path) with the environment of this
/// process and waits at most `timeoutSeconds`, killing it after that. Its
/// stdin is /dev/null. With `capturePath`, the child's stdout and stderr are
/// appended to that file (what the code under test prints, warns or logs)
/// and its file descriptor 3 is a pipe whose bytes this process copies to
/// its own stdout (the progress line) while the child runs, and closes when
/// it ends: no descendant of the child ever holds this process's console.
/// `env` entries ("NAME=value") are set in the child's environment on top of
/// this process's.
ChildResult runChild(const std::vector<std::string>& argv, int timeoutSeconds, const std::string& capturePath = "",
                     const std::vector<std::string>& env = {}, const CaseWatch& watch = {});

/// The most of a child's captured output (stdout and stderr) kept, bytes:
/// past it the capture file is cut back to this size every 500 ms (what was
/// written since the last cut stays), and a last line says how much was cut.
constexpr uint64_t kCaptureCapBytes = uint64_t(32) << 20;

/// One child of runChildren: runChild's arguments.
struct ChildSpec {
  std::vector<std::string> argv;
  std::string capturePath;
  std::vector<std::string> env;
  CaseWatch watch;
  /// Let it finish after requestStop() (within the time limit): the report
  /// writer of an interrupted run, so that what ran is still written.
  bool finishOnStop = false;
  /// Start it in a process group of its own and, once it has ended (or is
  /// stopped), kill what is left in that group (processes the code it ran
  /// left behind) before reaping it, so that the group's id is not reused.
  bool ownGroup = false;
  /// When not empty, written to the child's file descriptor 4 through a
  /// pipe that is then closed (a key the child reads before any code under
  /// test loads: not in its environment or command line).
  std::string secret;
};

/// The frames a target process writes on its console descriptor (fd 3,
/// `run-target --console-fd`), so that its parent relays what flagprop
/// writes there and nothing the code under test writes to the same
/// descriptor. A frame is one line: "\n" (which ends a line the code under
/// test left unfinished), the frame's sequence number (16 hex digits, from
/// 1, one counter per process), its MAC, one kind byte, the text, "\n"
/// ('T' text without a line end, 'L' a line, 'P' the progress line, drawn
/// in place; an empty 'P' clears it). The MAC is 32 hex digits of
/// HMAC-SHA256 under the process's key (ChildSpec::secret) of the sequence
/// number, the kind and the text: a frame the code under test read off the
/// pipe shows it neither the key nor a MAC it could use again, and the
/// parent takes a sequence number only once, each larger than the last. The
/// parent relays a frame that checks, its text as printable (consoleText);
/// any other line goes to the child's capture file as the code under test's
/// output. A child that was given no key gets no console descriptor.
/// Returns the frame's MAC (see above) for `seq`, `kind` and `text`.
std::string consoleMac(const std::string& key, uint64_t seq, char kind, std::string_view text);

/// `text` for a terminal: every C0 control byte, DEL and UTF-8-encoded C1
/// control becomes '?' (an escape sequence cannot move the cursor or clear
/// the screen); other UTF-8 text is kept.
std::string consoleText(std::string_view text);

/// Writes one frame (see consoleMac) under `key` to `fd` in one write(2):
/// a text with a line end in it is cut there (what follows is dropped; write
/// line by line, as ConsoleFrames does). Errors are ignored: the console is
/// best effort.
void writeConsoleFrame(int fd, const std::string& key, char kind, std::string_view text);

/// A std::streambuf over a console descriptor that writes whole lines as
/// 'L' frames and, on a flush, the rest of a line as a 'T' frame
/// (std::cout of a run-target process).
class ConsoleFrames : public std::streambuf {
 public:
  ConsoleFrames(int fd, std::string key) : fd_(fd), key_(std::move(key)) {}

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  int fd_;
  std::string key_, line_;
};

/// Runs every child of `children` at once, as runChild runs one, from this
/// thread (one loop polls them all; no threads), and waits for all of them,
/// each at most `timeoutSeconds`. Returns their results in order; a child
/// that could not be started has exitCode -1 and its spawnError.
std::vector<ChildResult> runChildren(const std::vector<ChildSpec>& children, int timeoutSeconds);

/// What a target process printed (a runChild capture file), for the
/// report: {"lines": total lines, "distinct": [{"text", "count"}] (the
/// `keep` most frequent, first seen first among equals), "tail": the last
/// 12 lines (what a process that died printed last)}. A missing or empty
/// file gives {"lines": 0, ...}.
json capturedOutput(const std::string& path, size_t keep = 40);
/// The same over several capture files read one after another (the
/// processes of one target under --jobs).
json capturedOutput(const std::vector<std::string>& paths, size_t keep = 40);

/// How a child process ended, one line: "" when it exited 0 or 1 after
/// finishing (`finished`), else "target process died with signal 11
/// (Segmentation fault)", "... timed out after N s", "... exited ...".
std::string childEnd(const ChildResult& r, bool finished, int timeoutSeconds);

/// After a child of target `t` died on the case in `inflight` ({"key": run
/// key, "case"}): the failed outcome of that run, its case the
/// counterexample (not shrunk: the process that would have shrunk it is
/// gone), `observations.crash` the reason, its judging that of the entry
/// the run used (targetEntry), which its reproducer judges by. Throws
/// std::invalid_argument when `inflight` names no run.
PropertyOutcome crashOutcome(const json& inflight, const std::string& why, const Target& t);

/// The target document a child wrote to `outPath` (read back), completed
/// with what the parent saw: a crash, a timeout or an exit before the child
/// finished becomes a result `process` with status `error` and the reason,
/// and `crash` names it; a document that was never written becomes a target
/// error. Results written before that are kept.
/// With `key`, a document whose `mac` does not match (see
/// writeTargetDocument) is not used: it becomes a target error.
json collectChildDocument(const std::string& outPath, const std::string& manifest, const ChildResult& r,
                          int timeoutSeconds, const std::string& key = "");

}  // namespace flagprop
