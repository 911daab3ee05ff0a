#pragma once
// SIGINT and SIGTERM while a run is in this process: they ask the run to stop at its next
// check (a checkpoint once its loop runs, exit 128 + the signal) instead of ending the process.
#include <csignal>

namespace poreforge::app {

/// The run's handlers for SIGINT and SIGTERM, from construction to destruction; the handlers
/// the process had, flags and all, are put back after, so a program that runs reconstructions
/// in-process (the Python module) keeps its own. The handlers are the process's: one run at a
/// time (a second throws InputError).
///
/// The first signal is kept (caught_signal) for the run to read at its checks. A second one
/// more than a second later is the user insisting: it ends the process at once, as the default
/// action would. One within the second is the same request arriving twice, as it does from
/// `timeout` (which signals the run, then its process group) and from job schedulers.
class RunSignals {
 public:
  RunSignals();
  ~RunSignals();
  RunSignals(const RunSignals&) = delete;
  RunSignals& operator=(const RunSignals&) = delete;

 private:
  struct sigaction m_interrupt {}, m_terminate {};
};

/// The first signal caught since the current RunSignals was made, or 0.
int caught_signal();

}  // namespace poreforge::app
