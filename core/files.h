// Files: strict reads (regular files under a size limit), SHA256 and atomic
// writes. No interpreter needed.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace flagprop {

/// A file that cannot be used; what() is one line naming the path and why.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Reads a whole regular file of at most `maxBytes` bytes. Throws FileError
/// ("PATH: no such file", "is a directory", "is not a regular file" for a
/// FIFO, device or socket, "is larger than N bytes", "cannot be read").
std::string readFile(const std::string& path, uint64_t maxBytes = uint64_t(1) << 30);

/// SHA256 of a regular file's bytes as 64 lower-case hex digits (OpenSSL's
/// EVP digest, read in 1 MiB blocks). Throws FileError as readFile does.
std::string sha256File(const std::string& path);

/// Removes `path` and everything below it (not following symbolic links);
/// nothing when it does not exist. Throws FileError naming what could not be
/// removed. Written on POSIX nftw(3) rather than std::filesystem::remove_all:
/// PyTorch 2.x wheels export their own std::filesystem symbols, and calling
/// remove_all in a process that loaded libtorch 2.11 (+cu130) crashed with a
/// segmentation fault on an H200 host.
void removeTree(const std::string& path);

/// `j` as JSON text, indented by 2; bytes of strings that are not valid
/// UTF-8 (e.g. from a manifest or an exception message) become U+FFFD
/// instead of failing the whole report.
std::string jsonText(const nlohmann::json& j);

/// Writes `text` to `path` atomically (a new temporary file, made with
/// O_EXCL | O_NOFOLLOW after removing whatever was at its name, so a
/// symbolic link planted there is not written through; then rename).
/// Throws FileError naming the path and the reason ("cannot write P (write:
/// No space left on device)"); the temporary file is removed on failure.
void writeText(const std::string& path, const std::string& text);

/// HMAC-SHA256 of `text` under `key` (RFC 2104, OpenSSL's HMAC), as 64
/// lower-case hex digits.
std::string hmacSha256Hex(const std::string& key, const std::string& text);

/// Replaces the content of `path` with `text` through a file descriptor kept
/// open per path (one pwrite and one ftruncate: a few µs, where writeText's
/// create + rename costs a millisecond on some file systems). For a record
/// rewritten per case that a parent reads after this process died; not
/// atomic against a reader while it runs. Throws FileError when the file
/// cannot be opened.
void overwriteFile(const std::string& path, const std::string& text);

/// The folder flagprop reads its own files from at run time (python/,
/// mocks/, fixtures/, schemas/, catalog/flaggems_overloads.txt,
/// reports/reproducer.py.in; the same layout as the source tree):
/// $FLAGPROP_HOME when set; else the installed copy beside the running
/// binary, BIN/../share/flagprop (`cmake --install`, the Debian package),
/// when it holds python/flagprop; else the source tree the binary was built
/// from (FLAGPROP_SOURCE_DIR). No trailing slash.
std::string dataRoot();

}  // namespace flagprop
