#include "run_signals.hpp"

#include <time.h>

#include <atomic>
#include <cstdint>

#include "poreforge/error.hpp"

namespace poreforge::app {
namespace {

// A second signal within this long of the first is that same request, not the user insisting:
// taken for insisting, it would end the run before the checkpoint the first asked for.
constexpr int64_t kSameRequestNs = 1'000'000'000;

// Written by the handler on whichever thread the signal lands (OpenMP threads included), so
// lock-free atomics: those, clock_gettime, signal() and raise() are async-signal-safe.
std::atomic<int> g_signal{0};
std::atomic<int64_t> g_signal_ns{0};  // when the first signal came (CLOCK_MONOTONIC); 0: not yet stored
std::atomic<bool> g_run_in_progress{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "the signal handler may only touch lock-free atomics");

int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

extern "C" void on_signal(int sig) {
  const int64_t now = monotonic_ns();
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) {
    g_signal_ns.store(now);
    return;
  }
  // A first signal whose time is not yet stored is being handled on another thread this instant.
  const int64_t first = g_signal_ns.load();
  if (first == 0 || now - first < kSameRequestNs) return;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

RunSignals::RunSignals() {
  if (g_run_in_progress.exchange(true))
    throw InputError("another poreforge run is going on in this process: runs take turns (the signal handlers are "
                     "the process's)");
  struct sigaction ours {};
  ours.sa_handler = on_signal;
  sigemptyset(&ours.sa_mask);
  ours.sa_flags = SA_RESTART;  // file writes carry on through a signal; the run checks caught_signal
  g_signal = 0;
  g_signal_ns = 0;
  sigaction(SIGINT, &ours, &m_interrupt);
  sigaction(SIGTERM, &ours, &m_terminate);
}

RunSignals::~RunSignals() {
  sigaction(SIGINT, &m_interrupt, nullptr);
  sigaction(SIGTERM, &m_terminate, nullptr);
  g_run_in_progress = false;
}

int caught_signal() { return g_signal.load(); }

}  // namespace poreforge::app
