// flagprop command line.
#include "matrix/runner.h"
#include "ops/catalog.h"
#include "suites/property.h"

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

const char* kUsage = R"(flagprop: property-based checks for the Torch-FL x FlagGems stack

usage:
  flagprop run [options]           run every target (default: the built-in fixture
                                   matrix on the CPU) and write a report
  flagprop run-target --manifest M --out FILE [options]
                                   run one target in this process (used by run)
  flagprop --help

options:
  --manifest PATH     target (flagprop.target/1) or matrix (flagprop.matrix/1)
                      manifest; repeatable; default fixtures/targets/default.json
  --report-dir DIR    where report.json, report.md, junit/ and reproducers/ go
                      (default ./flagprop-report)
  --property ID       run only this property: P1 .. P6, or P5/OP, P5/OP/DTYPE;
                      repeatable
  --op NAME           P5 / P6: run only this catalog op (e.g. add.Tensor); repeatable
  --dtype D           P5 / P6: run only this dtype (float32, float16, bfloat16,
                      int32); repeatable
  --cases N           generated cases per property run (default: the manifest's
                      cases, 100, for P1-P4 and op_cases, 50, per op and dtype
                      for P5 / P6)
  --seed S            RapidCheck seed (default or 0: random; printed and reported)
  --reproduce STR     replay a RapidCheck reproduce string from a report
  --timeout SEC       per-target process time limit (default 1800)
  --no-isolate        run targets in this process instead of one process each

exit status: 0 every result as expected (pass, skip, or the manifest's
'expect'); 1 some result unexpected; 2 bad usage.
)";

// A decimal number that fits in 64 bits (no sign, no overflow).
bool number(const char* s, unsigned long long& out) {
  if (!s || !*s || *s == '-' || *s == '+') return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(s, &end, 10);
  return errno == 0 && end && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  if (cmd != "run" && cmd != "run-target") {
    std::cerr << "flagprop: unknown command '" << cmd << "' (try flagprop --help)\n";
    return 2;
  }
  flagprop::CliOptions opts;
  std::string out, junit;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= args.size()) {
        std::cerr << "flagprop: " << a << " needs " << what << "\n";
        std::exit(2);
      }
      return args[++i].c_str();
    };
    unsigned long long n = 0;
    if (a == "--manifest") opts.manifests.push_back(value("a path"));
    else if (a == "--report-dir") opts.reportDir = value("a directory");
    else if (a == "--property") {
      std::string p = value("a property id (P1 .. P6)");
      const std::string why = flagprop::checkRunKey(p);
      if (!why.empty()) {
        std::cerr << "flagprop: --property " << p << ": " << why << "\n";
        return 2;
      }
      opts.properties.push_back(p);
    } else if (a == "--op") {
      std::string p = value("a catalog op name");
      if (!flagprop::findOp(p)) {
        std::cerr << "flagprop: --op: no catalog op '" << p << "' (known:";
        for (const auto& e : flagprop::catalog()) std::cerr << " " << e.name;
        std::cerr << ")\n";
        return 2;
      }
      opts.ops.push_back(p);
    } else if (a == "--dtype") {
      std::string d = value("a dtype");
      if (!flagprop::knownDtype(d)) {
        std::cerr << "flagprop: --dtype must be float32, float16, bfloat16 or int32, not '" << d << "'\n";
        return 2;
      }
      opts.dtypes.push_back(d);
    } else if (a == "--cases") {
      if (!number(value("a number"), n) || n == 0 || n > 1000000) {
        std::cerr << "flagprop: --cases needs a number from 1 to 1000000\n";
        return 2;
      }
      opts.run.cases = static_cast<int>(n);
    } else if (a == "--seed") {
      if (!number(value("a number"), n)) {
        std::cerr << "flagprop: --seed needs an integer from 0 to 2^64 - 1 (0 picks a random seed)\n";
        return 2;
      }
      opts.run.seed = n;
    } else if (a == "--reproduce") opts.run.reproduce = value("a reproduce string");
    else if (a == "--timeout") {
      if (!number(value("seconds"), n) || n == 0 || n > 604800) {
        std::cerr << "flagprop: --timeout needs a number of seconds from 1 to 604800\n";
        return 2;
      }
      opts.timeoutSeconds = static_cast<int>(n);
    } else if (a == "--no-isolate") opts.isolate = false;
    else if (a == "--out" && cmd == "run-target") out = value("a file");
    else if (a == "--junit" && cmd == "run-target") junit = value("a file");
    else if (a == "--repro-dir" && cmd == "run-target") opts.run.reproducerDir = value("a directory");
    else {
      std::cerr << "flagprop: unknown option '" << a << "' (try flagprop --help)\n";
      return 2;
    }
  }
  if (!opts.run.reproduce.empty()) {
    std::vector<std::string> ids;
    std::string error;
    if (!flagprop::parseReproduceString(opts.run.reproduce, ids, error)) {
      std::cerr << "flagprop: --reproduce: not a RapidCheck reproduce string (" << error << ")\n";
      return 2;
    }
    if (opts.properties.empty()) opts.properties = ids;  // replay only what the string holds
  }
  try {
    if (cmd == "run-target") {
      if (opts.manifests.size() != 1 || out.empty()) {
        std::cerr << "flagprop: run-target needs exactly one --manifest and --out\n";
        return 2;
      }
      return flagprop::runTarget(opts.manifests[0], out, junit, opts);
    }
    if (opts.run.reproducerDir.empty()) opts.run.reproducerDir = opts.reportDir + "/reproducers";
    char self[4096] = {0};
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    std::string exe = len > 0 ? std::string(self, static_cast<size_t>(len)) : std::string(argv[0]);
    std::vector<std::string> all(argv, argv + argc);
    return flagprop::runMatrix(opts, exe, all);
  } catch (const std::exception& e) {
    std::cerr << "flagprop: " << e.what() << "\n";
    return 2;
  }
}
