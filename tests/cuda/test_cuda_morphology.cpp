// The CUDA frame pipeline against the CPU morphology: batches of 2D frames (full and partial
// batches), volumes, pageable and pinned host memory, device-resident calls with poisoned
// outputs, graphs replayed many times; clear errors.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "poreforge/cuda_morphology.hpp"
#include "poreforge/error.hpp"
#include "poreforge/morphology.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

#define CUDA_OK(call) REQUIRE((call) == cudaSuccess)

// The pipeline on the CPU, one frame at a time.
Mask cpu_pipeline(Mask frame, const std::vector<cuda::MorphStep>& steps) {
  for (const auto& s : steps) frame = morphology(frame, s.op, s.element, s.iterations, Backend::cpu);
  return frame;
}

// `count` random frames of `shape`, back to back, and the CPU's answer for each.
struct Frames {
  std::vector<uint8_t> in, expected;
};

Frames make_frames(Shape shape, Spacing spacing, int count, const std::vector<cuda::MorphStep>& steps, uint64_t seed) {
  Frames f;
  for (int i = 0; i < count; ++i) {
    Mask m = testing::random_volume(shape, i % 3, 0.35 + 0.05 * (i % 4), seed + uint64_t(i));
    m.set_spacing(spacing);
    f.in.insert(f.in.end(), m.values().begin(), m.values().end());
    const Mask e = cpu_pipeline(m, steps);
    f.expected.insert(f.expected.end(), e.values().begin(), e.values().end());
  }
  return f;
}

const std::vector<cuda::MorphStep> video_steps = {
    {MorphOp::erode, StructuringElement::box(7, 7), 1},
    {MorphOp::dilate, StructuringElement::box(7, 7), 4},
    {MorphOp::close, StructuringElement::ball(2.5), 1},
    {MorphOp::open, StructuringElement::box(40, 2), 1},
};

}  // namespace

TEST_CASE("morphology.cuda.pipeline_batches_match_cpu" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shape{100, 37, 1};
  const int count = 13;  // two full batches of 5 and a partial one
  const Frames f = make_frames(shape, {}, count, video_steps, seed);
  cuda::PipelineConfig config;
  config.frame = shape;
  config.steps = video_steps;
  config.batch = 5;
  config.slots = 2;
  cuda::FramePipeline pipeline(config);

  SUBCASE("pageable host memory") {
    std::vector<uint8_t> out(f.in.size(), 0xAB);
    const auto stats = pipeline.process(f.in.data(), out.data(), count);
    CHECK(stats.frames == count);
    CHECK(stats.milliseconds > 0);
    CHECK(out == f.expected);
    std::fill(out.begin(), out.end(), uint8_t(0xAB));  // again: the captured graphs replay
    pipeline.process(f.in.data(), out.data(), count);
    CHECK(out == f.expected);
  }
  SUBCASE("pinned host memory") {
    cuda::PinnedBuffer in(f.in.size()), out(f.in.size());
    std::memcpy(in.data(), f.in.data(), f.in.size());
    std::memset(out.data(), 0xAB, out.size());
    pipeline.process(in.data(), out.data(), count);
    CHECK(std::vector<uint8_t>(out.data(), out.data() + out.size()) == f.expected);
  }
  SUBCASE("device-resident, outputs poisoned") {
    const std::size_t bytes = pipeline.frame_bytes() * 5;
    uint8_t *d_in = nullptr, *d_out = nullptr;
    CUDA_OK(cudaMalloc(&d_in, bytes));
    CUDA_OK(cudaMalloc(&d_out, bytes));
    const auto stream = static_cast<cudaStream_t>(pipeline.stream());
    for (int rep = 0; rep < 3; ++rep) {
      const int frames = rep == 2 ? 3 : 5;
      CUDA_OK(cudaMemcpyAsync(d_in, f.in.data(), pipeline.frame_bytes() * frames, cudaMemcpyHostToDevice, stream));
      CUDA_OK(cudaMemsetAsync(d_out, 0xAB, bytes, stream));
      pipeline.apply_async(d_in, d_out, frames);
      std::vector<uint8_t> out(pipeline.frame_bytes() * frames);
      CUDA_OK(cudaMemcpyAsync(out.data(), d_out, out.size(), cudaMemcpyDeviceToHost, stream));
      pipeline.synchronize();
      CHECK(out == std::vector<uint8_t>(f.expected.begin(), f.expected.begin() + std::ptrdiff_t(out.size())));
    }
    CHECK_THROWS_AS(pipeline.apply_async(d_in, d_out, 6), InputError);
    cudaFree(d_in);
    cudaFree(d_out);
  }
}

TEST_CASE("morphology.cuda.pipeline_row_alignment" * PF_GPU_DECORATORS) {
  // Rows a multiple of 16 bytes move 16 bytes at a time, but only from 16-aligned buffers:
  // aligned and misaligned device pointers, a full last word (64) and a half one (48).
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  for (const Shape shape : {Shape{64, 9, 1}, Shape{48, 20, 1}}) {
    CAPTURE(to_string(shape));
    const Frames f = make_frames(shape, {}, 3, video_steps, seed);
    cuda::PipelineConfig config;
    config.frame = shape;
    config.steps = video_steps;
    config.batch = 3;
    config.slots = 1;
    cuda::FramePipeline pipeline(config);
    const auto stream = static_cast<cudaStream_t>(pipeline.stream());
    uint8_t *d_in = nullptr, *d_out = nullptr;
    CUDA_OK(cudaMalloc(&d_in, f.in.size() + 1));
    CUDA_OK(cudaMalloc(&d_out, f.in.size() + 1));
    for (int offset : {0, 1}) {
      CAPTURE(offset);
      CUDA_OK(cudaMemcpyAsync(d_in + offset, f.in.data(), f.in.size(), cudaMemcpyHostToDevice, stream));
      CUDA_OK(cudaMemsetAsync(d_out, 0xAB, f.in.size() + 1, stream));
      pipeline.apply_async(d_in + offset, d_out + offset, 3);
      std::vector<uint8_t> out(f.in.size());
      CUDA_OK(cudaMemcpyAsync(out.data(), d_out + offset, out.size(), cudaMemcpyDeviceToHost, stream));
      pipeline.synchronize();
      CHECK(out == f.expected);
    }
    cudaFree(d_in);
    cudaFree(d_out);
  }
}

TEST_CASE("morphology.cuda.pipeline_volumes_match_cpu" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const std::vector<cuda::MorphStep> steps = {
      {MorphOp::dilate, StructuringElement::ball(3.2), 1},
      {MorphOp::erode, StructuringElement::box(3, 5, 4), 2},
      {MorphOp::open, StructuringElement::ball(1.5), 1},
  };
  for (const Spacing spacing : {Spacing{}, Spacing{1.0, 0.6, 1.3}}) {
    const Shape shape{45, 33, 29};
    const Frames f = make_frames(shape, spacing, 4, steps, seed);
    cuda::PipelineConfig config;
    config.frame = shape;
    config.spacing = spacing;
    config.steps = steps;
    cuda::FramePipeline pipeline(config);
    std::vector<uint8_t> out(f.in.size(), 0xAB);
    pipeline.process(f.in.data(), out.data(), 4);
    CAPTURE(spacing.y);
    CHECK(out == f.expected);
  }
}

TEST_CASE("morphology.cuda.pipeline_errors" * PF_GPU_DECORATORS) {
  cuda::PipelineConfig c;
  c.frame = {16, 16, 4};
  c.steps = {{MorphOp::erode, StructuringElement::box(3, 3), 1}};
  c.batch = 2;
  CHECK_THROWS_AS(cuda::FramePipeline{c}, InputError);  // batches are for 2D frames
  c.batch = 1;
  c.slots = 0;
  CHECK_THROWS_AS(cuda::FramePipeline{c}, InputError);
  c.slots = 2;
  c.steps.clear();
  CHECK_THROWS_AS(cuda::FramePipeline{c}, InputError);
  c.steps = {{MorphOp::dilate, StructuringElement::box(3, 3), 0}};
  CHECK_THROWS_AS(cuda::FramePipeline{c}, InputError);
  c.steps = {{MorphOp::dilate, StructuringElement::ball(-1), 1}};
  CHECK_THROWS_AS(cuda::FramePipeline{c}, InputError);
  c.steps = {{MorphOp::dilate, StructuringElement::box(3, 3), 1}};
  CHECK(cuda::pipeline_workspace_bytes(c) == 2 * (2 * 1024 + 2 * 16 * 4 * 4));
}
