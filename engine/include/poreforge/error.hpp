#pragma once
/// Errors the engine reports. Library code never exits: it throws, and the CLI turns the
/// exception into one line and a non-zero exit code.
#include <stdexcept>
#include <string>

namespace poreforge {

/// Bad input from the user: a file, a shape, a label, a parameter. The message names the
/// problem in words a user can act on.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The work would need more memory than the machine has (a bad input of its kind: a smaller
/// volume, or another backend, would do). The CLI reports it as any InputError; the Python
/// module raises MemoryError.
class MemoryLimitError : public InputError {
 public:
  using InputError::InputError;
};

/// A failure of the machine rather than the input: a CUDA call, an allocation, an I/O error.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What every backend says of a phase with no voxel, for callers that check before the engine
/// runs (the Python module, on a CuPy array).
std::string empty_phase_message();

}  // namespace poreforge
