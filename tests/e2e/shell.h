// Helpers of the end-to-end tests that run flagprop as a user does.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace flagprop::e2e {

/// Runs `cmd` under /bin/sh, its stdout and stderr together into `out`
/// (when given); returns its exit status, or -1 when it did not exit.
inline int sh(const std::string& cmd, std::string* out = nullptr) {
  static int n = 0;
  const std::string log = (std::filesystem::temp_directory_path() /
                           ("flagprop-test-sh-" + std::to_string(getpid()) + "-" + std::to_string(++n)))
                              .string();
  const int rc = std::system((cmd + " >" + log + " 2>&1").c_str());
  std::stringstream ss;
  {
    std::ifstream in(log);
    ss << in.rdbuf();
  }
  std::filesystem::remove(log);
  if (out) *out = ss.str();
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/// The JSON file at `p`; throws nlohmann's parse_error when it is not JSON.
inline nlohmann::json load(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

/// An empty folder `flagprop-test-<name>-<pid>` under the temporary
/// directory (removed first if it exists).
inline std::filesystem::path scratch(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("flagprop-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace flagprop::e2e
