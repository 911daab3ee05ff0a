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

/// Writes `text` to `path` (nothing when `path` is empty); returns the exit status: 0, or 1 with
/// a line naming `program` and the file when it cannot be written or `path` is something other
/// than a regular file (a device such as /dev/null is never renamed over).
inline int write_record(const char* program, const std::string& path, const std::string& text) {
  if (path.empty()) {
    std::printf("\n(no --json PATH: the record is not written)\n");
    return 0;
  }
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    std::fprintf(stderr, "%s: error: --json %s is not a regular file\n", program, path.c_str());
    return 1;
  }
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
