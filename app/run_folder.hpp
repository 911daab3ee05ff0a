#pragma once
// The folders poreforge writes runs and sweeps into, and how it keeps from destroying
// anything else: names are one plain path component, a folder is replaced (--force) only when
// poreforge made it (a marker file inside), only below the output directory, and only while
// no other poreforge process holds its lock.
#include <filesystem>
#include <string>
#include <vector>

namespace poreforge::app {

constexpr const char* kRunMarker = ".poreforge-run";
constexpr const char* kSweepMarker = ".poreforge-sweep";
constexpr const char* kLockFile = ".poreforge-lock";

/// Why `name` cannot name a run or sweep folder, or "" when it can: one path component of
/// letters, digits, '-', '_' and '.', not starting with '.' (so never '.', '..' or hidden).
std::string folder_name_problem(const std::string& name);

/// An exclusive lock on a run or sweep folder: `flock` on its lock file, which holds the
/// holder's PID. The kernel drops the lock when its process dies, so a lock left by a killed
/// process is taken over (and said so in `taken_over`). Move-only; released when destroyed.
class FolderLock {
 public:
  FolderLock() = default;
  /// Throws InputError naming the folder and the holder's PID while another process holds it.
  /// `what` ("run", "sweep") names the folder in the message.
  FolderLock(const std::filesystem::path& dir, const std::string& what);
  ~FolderLock();
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  /// The PID a dead holder left in the lock file (0 when the lock was free and clean).
  long taken_over() const { return m_taken_over; }

 private:
  void release() noexcept;
  int m_fd = -1;
  long m_taken_over = 0;
};

/// A run or sweep folder this process owns: its path (resolved, below the output directory)
/// and its lock.
struct OwnedFolder {
  std::filesystem::path dir;
  FolderLock lock;
};

/// Makes `output`/`name` a fresh folder of kind `marker` (kRunMarker or kSweepMarker) for this
/// process. An existing folder is refused unless `force`, and with `force` it is emptied only
/// when it is a real directory (not a link) holding `marker` and its lock (and the locks of
/// the run folders inside it) can be taken. `what` ("run", "sweep") and `name_key` (the
/// setting that named it) word the errors. Throws InputError before removing anything.
OwnedFolder claim_folder(const std::string& output, const std::string& name, const std::string& name_key,
                         const char* marker, const std::string& what, bool force);

/// Removes the temporaries (`*.tmp-PID`) that a killed writer left in `dir` and
/// `dir`/checkpoints; call while holding the folder's lock. Returns the paths removed.
std::vector<std::filesystem::path> remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace poreforge::app
