// The option table (tools/options.h): the parser, a target process's
// arguments, --help and docs/cli.md all come from it and agree.
#include "tools/options.h"

#include "core/files.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace flagprop {
namespace {

// argv for a command and its options.
std::vector<std::string> argv(const std::string& command, std::vector<std::string> opts) {
  opts.insert(opts.begin(), command);
  return opts;
}

// What a target process of `cli`'s run is given, parsed back as run-target
// parses it (with the plumbing a parent adds).
Cli targetProcessOf(const Cli& cli, const std::vector<OptionSpec>& table) {
  const SupervisorOptions so = supervisorOptions(cli, "/bin/flagprop");
  std::vector<std::string> args = {"run-target", "--manifest",
                                   std::string(FLAGPROP_SOURCE_DIR) + "/fixtures/targets/default.json", "--out",
                                   "o.json"};
  const auto more = targetProcessOptions(so, table);
  args.insert(args.end(), more.begin(), more.end());
  Cli child;
  const std::string why = parseCommandLine(args, child, table);
  EXPECT_EQ(why, "") << "a target process refuses what its parent gave it";
  return child;
}

// A new option, declared in the table alone, is parsed, shown in --help and
// docs/cli.md's table, and reaches a target process, which parses it back to
// the same setting.
TEST(Options, AnOptionAddedOnlyToTheTableReachesTheTargetProcessAndTheHelp) {
  std::vector<OptionSpec> table = runOptions();
  OptionSpec extra;
  extra.flag = "--replays";
  extra.value = "N";
  extra.field = "RunOptions::flakyReplays";
  extra.phase = "confirm";
  extra.help = "judge a failing case N more times before calling it a failure";
  extra.apply = [](Cli& cli, const std::string& v) {
    cli.target.run.flakyReplays = std::stoi(v);
    return std::string();
  };
  extra.pass = [](const SupervisorOptions& o, std::vector<std::string>& a) {
    a.insert(a.end(), {"--replays", std::to_string(o.target.run.flakyReplays)});
  };
  table.push_back(extra);
  Cli cli;
  ASSERT_EQ(parseCommandLine(argv("run", {"--replays", "7"}), cli, table), "");
  EXPECT_EQ(cli.target.run.flakyReplays, 7);
  EXPECT_EQ(targetProcessOf(cli, table).target.run.flakyReplays, 7);
  const std::string help = optionsHelp(table);
  EXPECT_NE(help.find("\n  --replays N" + std::string(9, ' ') + "judge a failing case N more times"), std::string::npos)
      << help;
  EXPECT_NE(optionsMarkdown(table).find("| `--replays N` | confirm |"), std::string::npos);
  Cli without;
  EXPECT_EQ(parseCommandLine(argv("run", {"--replays", "7"}), without),
            "unknown option '--replays' (try flagprop run --help)")
      << "the real table does not have it";
}

// Every option a run passes to its target processes parses there to the
// same setting: the run's options, given all at once, and what a target
// process reads from its arguments.
TEST(Options, EveryPassedOptionReachesTheTargetProcessUnchanged) {
  Cli cli;
  const std::string db = (std::filesystem::temp_directory_path() / "flagprop-options-db").string();
  ASSERT_EQ(
      parseCommandLine(argv("run", {"--property",     "P5", "--op",       "tanh", "--dtype",       "float16",
                                    "--cases",        "9",  "--seed",     "12",   "--shrink-time", "3",
                                    "--distinct",     "2",  "--run-time", "40",   "--precompile",  "2",
                                    "--case-timeout", "77", "--db",       db,     "--verbose",     "--unverified"}),
                       cli),
      "");
  const Cli child = targetProcessOf(cli, runOptions());
  const TargetRunOptions &a = cli.target, &b = child.target;
  EXPECT_EQ(b.selection.properties, a.selection.properties);
  EXPECT_EQ(b.selection.ops, a.selection.ops);
  EXPECT_EQ(b.selection.dtypes, a.selection.dtypes);
  EXPECT_EQ(b.run.cases, 9);
  EXPECT_EQ(b.run.seed, 12u);
  EXPECT_EQ(b.run.shrinkSeconds, 3);
  EXPECT_EQ(b.run.distinct, 2);
  EXPECT_EQ(b.run.runSeconds, 40);
  EXPECT_EQ(b.precompileWorkers, 2);
  EXPECT_EQ(child.caseTimeoutSeconds, 77);
  EXPECT_EQ(child.db, cli.db);
  EXPECT_TRUE(child.verbose);
  EXPECT_TRUE(b.unverified);
  Cli nodb;
  ASSERT_EQ(parseCommandLine(argv("run", {"--no-db"}), nodb), "");
  EXPECT_EQ(targetProcessOf(nodb, runOptions()).db, "") << "--no-db reaches the target process";
}

// docs/cli.md's options table is the table's (tools/docs_figures.py writes it).
TEST(Options, TheDocsOptionsTableIsTheTables) {
  const std::string doc = readFile(std::string(FLAGPROP_SOURCE_DIR) + "/docs/cli.md");
  const std::string begin = "<!-- options: begin -->\n", end = "<!-- options: end -->";
  const auto a = doc.find(begin), b = doc.find(end);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(doc.substr(a + begin.size(), b - a - begin.size()), optionsMarkdown())
      << "run python3 tools/docs_figures.py --write";
}

// Plumbing stays out of the help; a run-target option is refused by run.
TEST(Options, PlumbingIsNeitherInTheHelpNorTakenByRun) {
  for (const auto& o : runOptions())
    if (o.internal) EXPECT_EQ(optionsHelp().find("  " + o.flag + " "), std::string::npos) << o.flag;
  Cli cli;
  EXPECT_EQ(parseCommandLine(argv("run", {"--out", "x"}), cli), "unknown option '--out' (try flagprop --help)");
  Cli flagWithValue;
  EXPECT_EQ(parseCommandLine(argv("run", {"--quiet=1"}), flagWithValue), "--quiet takes no value");
}

// --continue DIR without --manifest or --seed continues DIR's own run: its
// manifests and seed (the default targets with a new seed would match none
// of its results, which were dropped without a word).
TEST(Options, ContinueWithoutManifestsTakesTheContinuedRunsOwn) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "flagprop-options-continue";
  std::filesystem::create_directories(dir);
  const std::string manifest = std::string(FLAGPROP_SOURCE_DIR) + "/fixtures/targets/well-behaved.json";
  writeText((dir / "report.json").string(), json({{"schema", "flagprop.report/1"},
                                                  {"targets", json::array()},
                                                  {"provenance", {{"manifests", {manifest}}, {"seed", "4242"}}}})
                                                .dump());
  Cli cli;
  ASSERT_EQ(parseCommandLine(argv("run", {"--continue", dir.string(), "--report-dir", (dir / "next").string()}), cli),
            "");
  EXPECT_EQ(cli.manifests, std::vector<std::string>{manifest});
  EXPECT_EQ(cli.target.run.seed, 4242u);
  Cli given;
  ASSERT_EQ(parseCommandLine(argv("run", {"--continue", dir.string(), "--report-dir", (dir / "next").string(), "--seed",
                                          "5", "--manifest", manifest}),
                             given),
            "");
  EXPECT_EQ(given.target.run.seed, 5u) << "a --seed given wins";
  writeText((dir / "report.json").string(), json({{"schema", "flagprop.report/1"}, {"targets", json::array()}}).dump());
  Cli none;
  EXPECT_NE(parseCommandLine(argv("run", {"--continue", dir.string(), "--report-dir", (dir / "next").string()}), none)
                .find("its report names no manifests"),
            std::string::npos);
  removeTree(dir.string());
}

}  // namespace
}  // namespace flagprop
