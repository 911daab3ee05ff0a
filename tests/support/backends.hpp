#pragma once
// Each backend test body is written once, as a function template over a backend tag, and
// registered for every backend the build has: "<area>.cpu.<case>" always, and
// "<area>.cuda.<case>" in CUDA builds — in test suite "gpu" (a CTest label), skipped where no
// device answers, so a machine without a GPU reports it skipped, never passed.
#include <doctest/doctest.h>

#include "poreforge/backend.hpp"

namespace poreforge::testing {

struct Cpu {
  static constexpr Backend backend = Backend::cpu;
};

struct Cuda {
  static constexpr Backend backend = Backend::cuda;
};

}  // namespace poreforge::testing

#define PF_TEST_CAT_(a, b) a##b
#define PF_TEST_CAT(a, b) PF_TEST_CAT_(a, b)

#ifdef POREFORGE_HAVE_CUDA
#define PF_GPU_DECORATORS doctest::test_suite("gpu") * doctest::skip(!::poreforge::has_cuda_device())
#define PF_REGISTER_CUDA_(area, name, fn) \
  TEST_CASE(area ".cuda." name * PF_GPU_DECORATORS) { fn<::poreforge::testing::Cuda>(); }
#else
#define PF_REGISTER_CUDA_(area, name, fn)
#endif

#define PF_BACKEND_TEST_(area, name, fn)                                           \
  template <class B>                                                               \
  static void fn();                                                                \
  TEST_CASE(area ".cpu." name) { fn<::poreforge::testing::Cpu>(); }                \
  PF_REGISTER_CUDA_(area, name, fn)                                                \
  template <class B>                                                               \
  static void fn()

/// PF_BACKEND_TEST("area", "case") { body using B::backend }
#define PF_BACKEND_TEST(area, name) PF_BACKEND_TEST_(area, name, PF_TEST_CAT(backend_test_, __LINE__))
