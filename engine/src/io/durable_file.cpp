#include "poreforge/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "poreforge/error.hpp"

namespace poreforge {
namespace {

void sync_path(const std::string& path, int flags) {
  if (const int fd = ::open(path.c_str(), flags | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

void commit_file(const std::string& temp, const std::string& path) {
  sync_path(temp, O_RDONLY);
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) throw RuntimeError("cannot move '" + temp + "' to '" + path + "': " + ec.message());
  std::string parent = std::filesystem::path(path).parent_path().string();
  sync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError("cannot write '" + temp + "': " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw RuntimeError("cannot write '" + temp + "': " + why);
    }
    done += std::size_t(n);
  }
  ::close(fd);
  try {
    commit_file(temp, path);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
}

}  // namespace poreforge
