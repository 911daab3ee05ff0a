#pragma once
// A benchmark's JSON record: written only where --json names a file, and durably (a temporary
// beside it, renamed into place): a run by hand with no --json never replaces a committed
// record under results/bench/, and a killed one never leaves half of one.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>

#include "poreforge/durable_file.hpp"

namespace poreforge::bench {

/// Whether `path` (--json's; empty: no record) can take the record: not something other than a
/// regular file (a device such as /dev/null is never renamed over), in a folder that exists.
/// Says why not in one line naming `program`. Called before a benchmark runs, so a mistyped
/// path costs no measurement, and again when the record is written.
inline bool record_path_usable(const char* program, const std::string& path) {
  if (path.empty()) return true;
  std::error_code ec;
  const std::filesystem::path p(path);
  const auto status = std::filesystem::status(p, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    std::fprintf(stderr, "%s: error: --json %s is not a regular file\n", program, path.c_str());
    return false;
  }
  const std::filesystem::path folder = p.parent_path();
  if (!folder.empty() && !std::filesystem::is_directory(folder, ec)) {
    std::fprintf(stderr, "%s: error: --json %s: no folder %s\n", program, path.c_str(), folder.c_str());
    return false;
  }
  return true;
}

/// Writes `text` to `path` (nothing when `path` is empty); returns the exit status: 0, or 1 with
/// a line naming `program` and the file when it cannot be written.
inline int write_record(const char* program, const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::printf("\n(no --json PATH: the record is not written)\n");
    return 0;
  }
  if (!record_path_usable(program, path)) return 1;
  try {
    write_text_file(path, text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
  std::printf("\nwrote %s\n", path.c_str());
  return 0;
}

}  // namespace poreforge::bench
