#include "run_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "poreforge/durable_file.hpp"
#include "poreforge/error.hpp"

namespace poreforge::app {
namespace fs = std::filesystem;

std::string folder_name_problem(const std::string& name) {
  const std::string rule = "must be one folder name of letters, digits, '-', '_' and '.', not starting with '.' (got '" +
                           name + "')";
  if (name.empty() || name.front() == '.' || name.size() > 200) return rule;
  for (unsigned char c : name)
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return rule;
  return "";
}

FolderLock::FolderLock(const fs::path& dir, const std::string& what) {
  const fs::path file = dir / kLockFile;
  m_fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd < 0) throw InputError("cannot lock " + what + " folder '" + dir.string() + "': " + std::strerror(errno));
  char text[32] = {};
  const ssize_t n = ::pread(m_fd, text, sizeof text - 1, 0);
  const long holder = n > 0 ? std::strtol(text, nullptr, 10) : 0;
  if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(m_fd);
    m_fd = -1;
    throw InputError(what + " folder '" + dir.string() + "' is in use by process " + std::to_string(holder) +
                     " (lock " + file.string() + "); wait for it to finish or stop it");
  }
  // A PID still written there: its process died holding the lock (a clean release empties it).
  m_taken_over = holder;
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(m_fd, 0) != 0 || ::pwrite(m_fd, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    ::close(m_fd);
    m_fd = -1;
    throw RuntimeError("cannot write the lock file '" + file.string() + "': " + std::strerror(errno));
  }
}

FolderLock::~FolderLock() { release(); }

// Emptied on a clean release, so a PID found in the file later marks a holder that died.
void FolderLock::release() noexcept {
  if (m_fd < 0) return;
  [[maybe_unused]] const int emptied = ::ftruncate(m_fd, 0);
  ::close(m_fd);
  m_fd = -1;
}

FolderLock::FolderLock(FolderLock&& other) noexcept : m_fd(other.m_fd), m_taken_over(other.m_taken_over) {
  other.m_fd = -1;
}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    release();
    m_fd = other.m_fd;
    m_taken_over = other.m_taken_over;
    other.m_fd = -1;
  }
  return *this;
}

OwnedFolder claim_folder(const std::string& output, const std::string& name, const std::string& name_key,
                         const char* marker, const std::string& what, bool force) {
  if (const std::string problem = folder_name_problem(name); !problem.empty())
    throw InputError(name_key + " " + problem);
  std::error_code ec;
  fs::create_directories(output.empty() ? "." : output, ec);
  if (ec) throw InputError("cannot create the output directory '" + output + "': " + ec.message());
  // The folder is a child of the resolved output directory, whatever links lead there.
  const fs::path parent = fs::canonical(output.empty() ? "." : output, ec);
  if (ec) throw InputError("cannot resolve the output directory '" + output + "': " + ec.message());
  if (!fs::is_directory(parent)) throw InputError("output directory '" + output + "' is not a directory");
  OwnedFolder owned;
  owned.dir = parent / name;
  const fs::path& dir = owned.dir;
  if (fs::create_directory(dir, ec) && !ec) {
    write_text_file((dir / marker).string(), "made by poreforge: --force may replace this " + what + " folder\n");
    owned.lock = FolderLock(dir, what);
    return owned;
  }
  const fs::file_status st = fs::symlink_status(dir);
  const std::string shown = (fs::path(output) / name).string();
  if (!fs::exists(st)) throw InputError("cannot create " + what + " folder '" + shown + "': " + ec.message());
  if (!force) throw InputError(what + " folder '" + shown + "' already exists (use --force to replace it)");
  if (fs::is_symlink(st))
    throw InputError(what + " folder '" + shown + "' is a symbolic link; --force replaces only a folder poreforge made");
  if (!fs::is_directory(st)) throw InputError("'" + shown + "' exists and is not a folder; --force does not replace it");
  if (!fs::is_regular_file(fs::symlink_status(dir / marker)))
    throw InputError(what + " folder '" + shown + "' was not made by poreforge (no " + marker +
                     " inside); --force replaces only folders poreforge made: remove it yourself or choose another " +
                     name_key);
  owned.lock = FolderLock(dir, what);
  // Run folders inside a sweep folder: none may be in use either.
  std::vector<FolderLock> inner;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory(ec) && !e.is_symlink(ec) && fs::exists(e.path() / kLockFile)) inner.emplace_back(e.path(), "run");
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string entry = e.path().filename().string();
    if (entry == marker || entry == kLockFile) continue;
    fs::remove_all(e.path());  // does not follow links: a link inside goes, never what it names
  }
  return owned;
}

std::vector<fs::path> remove_stale_temporaries(const fs::path& dir) {
  std::vector<fs::path> removed;
  for (const fs::path& folder : {dir, dir / "checkpoints"}) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) continue;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      const std::string name = e.path().filename().string();
      const auto at = name.rfind(".tmp-");
      if (at == std::string::npos || at + 5 == name.size()) continue;
      bool digits = true;
      for (std::size_t k = at + 5; k < name.size(); ++k) digits = digits && std::isdigit((unsigned char)name[k]);
      if (!digits || !e.is_regular_file(ec) || e.is_symlink(ec)) continue;
      if (fs::remove(e.path(), ec)) removed.push_back(e.path());
    }
  }
  return removed;
}

}  // namespace poreforge::app
