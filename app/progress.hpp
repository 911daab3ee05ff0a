#pragma once
// Progress of a long command on stderr: on a terminal one bar redrawn in place, otherwise (a
// log, a pipe) one plain line per step, so that logs stay readable.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

namespace poreforge::app {

class ProgressBar {
 public:
  /// `what` names the work ("measuring"); `total` steps.
  ProgressBar(std::string what, std::size_t total)
      : m_what(std::move(what)), m_total(total), m_live(::isatty(STDERR_FILENO) == 1) {
    draw("");
  }
  ~ProgressBar() {
    if (m_live) std::fputc('\n', stderr);
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// One more step done; `line` says which (a log gets it as a line of its own).
  void step(const std::string& line) {
    ++m_done;
    if (m_live) draw(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }

 private:
  void draw(const std::string& last) const {
    if (!m_live) return;
    constexpr std::size_t width = 30;
    const std::size_t filled = m_total ? width * m_done / m_total : width;
    std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %s\033[K", m_what.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), m_done, m_total, last.c_str());
    std::fflush(stderr);
  }

  std::string m_what;
  std::size_t m_total, m_done = 0;
  bool m_live;
};

}  // namespace poreforge::app
