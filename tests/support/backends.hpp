#pragma once
// Backend tags for TEST_CASE_TEMPLATE: each test body is written once and runs on every
// backend this build has. The CUDA tag joins when the CUDA twins exist.
#include "poreforge/backend.hpp"

namespace poreforge::testing {

struct Cpu {
  static constexpr Backend backend = Backend::cpu;
  static constexpr const char* name = "cpu";
};

}  // namespace poreforge::testing
