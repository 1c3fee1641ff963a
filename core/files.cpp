#include "core/files.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;

namespace flagprop {

namespace {

// Why `path` cannot be read as a regular file, or "" when it can.
std::string notRegular(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    return ec.message();  // e.g. "Too many levels of symbolic links"
  if (ec || st.type() == fs::file_type::not_found) return "no such file";
  if (st.type() == fs::file_type::directory) return "is a directory, not a file";
  if (st.type() != fs::file_type::regular) return "is not a regular file (a FIFO, device or socket)";
  return "";
}

std::ifstream openRegular(const std::string& path) {
  const std::string why = notRegular(path);
  if (!why.empty()) throw FileError(path + ": " + why);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path + ": cannot be read");
  return in;
}

}  // namespace

std::string readFile(const std::string& path, uint64_t maxBytes) {
  std::ifstream in = openRegular(path);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && size > maxBytes) throw FileError(path + ": is larger than " + std::to_string(maxBytes) + " bytes");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw FileError(path + ": cannot be read");
  return ss.str();
}

std::string sha256File(const std::string& path) {
  std::ifstream in = openRegular(path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw FileError(path + ": cannot hash (OpenSSL)");
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw FileError(path + ": cannot be read");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

void removeTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  static thread_local std::string failed;
  failed.clear();
  auto removeOne = [](const char* p, const struct stat*, int, struct FTW*) -> int {
    if (std::remove(p) != 0 && failed.empty()) failed = p;
    return 0;
  };
  nftw(path.c_str(), removeOne, 16, FTW_DEPTH | FTW_PHYS);
  if (!failed.empty()) throw FileError("cannot remove " + failed);
}

std::string jsonText(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void overwriteFile(const std::string& path, const std::string& text) {
  struct Kept {
    int fd;
    dev_t dev;
    ino_t ino;
  };
  static std::map<std::string, Kept> fds;
  auto it = fds.find(path);
  // The descriptor is used only while it is still this file, and `path`
  // still names it: code under test that closed it (and perhaps got its
  // number for a file of its own) or unlinked the file gets a fresh one.
  struct stat byFd {
  }, byPath{};
  if (it != fds.end() &&
      (::fstat(it->second.fd, &byFd) != 0 || byFd.st_dev != it->second.dev || byFd.st_ino != it->second.ino ||
       ::stat(path.c_str(), &byPath) != 0 || byPath.st_dev != byFd.st_dev || byPath.st_ino != byFd.st_ino)) {
    if (::fstat(it->second.fd, &byFd) == 0 && byFd.st_dev == it->second.dev && byFd.st_ino == it->second.ino)
      ::close(it->second.fd);  // still ours, only unlinked: close it (a closed or reused number is not ours to close)
    fds.erase(it);
    it = fds.end();
  }
  if (it == fds.end()) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::fstat(fd, &byFd) != 0) throw FileError("cannot write " + path + " (" + std::strerror(errno) + ")");
    it = fds.emplace(path, Kept{fd, byFd.st_dev, byFd.st_ino}).first;
  }
  // byFd is the file as it is now (either branch above took it): a file no
  // longer than `text` is `text` once written, with no truncate (a
  // truncate is most of the cost of this call on the per-case path).
  if (::pwrite(it->second.fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) ||
      (byFd.st_size > static_cast<off_t>(text.size()) &&
       ::ftruncate(it->second.fd, static_cast<off_t>(text.size())) != 0)) {
    ::close(it->second.fd);
    fds.erase(it);
    throw FileError("cannot write " + path);
  }
}

void writeText(const std::string& path, const std::string& text) {
  // Unique per process: two processes writing one path never share it.
  const std::string tmp = path + "." + std::to_string(::getpid()) + ".tmp";
  const auto fail = [&](const char* step) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());  // nothing half-written is left behind
    throw FileError("cannot write " + path + " (" + step + ": " + why + ")");
  };
  // A new file of its own: whatever is at the temporary name (a symbolic
  // link the code under test planted there) is removed, not written through.
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) fail("open");
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : ENOSPC;
      ::close(fd);
      errno = e;
      fail("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail("close");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
}

std::string hmacSha256Hex(const std::string& key, const std::string& text) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
            text.size(), mac, &n))
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[mac[i] >> 4];
    out += hex[mac[i] & 15];
  }
  return out;
}

std::string dataRoot() {
  static const std::string root = [] {
    if (const char* home = std::getenv("FLAGPROP_HOME"); home && *home) return std::string(home);
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const auto share = (exe.parent_path() / ".." / "share" / "flagprop").lexically_normal();
      if (std::filesystem::is_directory(share / "python" / "flagprop", ec)) return share.string();
    }
    return std::string(FLAGPROP_SOURCE_DIR);
  }();
  return root;
}

}  // namespace flagprop
