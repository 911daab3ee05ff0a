#pragma once
// Making a written file durable: every result poreforge writes goes to a temporary beside its
// final name and is moved into place only when its bytes are on disk, so a crash or a kill
// leaves either the old file or the new one, never a torn one.
#include <string>

namespace poreforge {

/// Flushes `temp` to disk, renames it to `path` and flushes the directory entry (POSIX only
/// promises the rename survives a crash once the directory itself is synced). Throws
/// RuntimeError naming both paths when the rename fails. Synchronous (fsync twice).
void commit_file(const std::string& temp, const std::string& path);

/// Writes `text` to `path` durably: `path.tmp-PID`, fsync, rename, directory fsync. Throws
/// RuntimeError when the file cannot be written; the temporary is removed on failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace poreforge
