// CUDA morphology benchmark: the second post's pipeline (erode 7×7 once, dilate 7×7 four times)
// on 3840×2160 uint8 masks through a FramePipeline — frames per second with the frames resident
// on the device (batches of B frames and single frames, CUDA events, median after warm-up) and
// streamed from host memory and back (pinned and pageable, overlapped on `slots` streams) — and
// a 512³ dilation by a ball of radius 10. Each result is checked against the CPU backend. The
// peers (OpenCV, CuPy) are measured by scripts/bench_morph_peers.py in the same gpu-check run.
//
//   bench_morph_cuda [--frames N] [--batch B] [--reps R] [--json PATH] [--save-volume RAW]
// --save-volume writes the 512³ mask (uint8, x fastest) for the peer script.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <functional>
#include <string>
#include <vector>

#include "cuda_timing.cuh"
#include "poreforge/backend.hpp"
#include "poreforge/cuda_morphology.hpp"
#include "poreforge/generators.hpp"
#include "bench_record.hpp"
#include "poreforge/io.hpp"
#include "poreforge/morphology.hpp"

using namespace poreforge;
using bench::time_ms;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

const std::vector<cuda::MorphStep> video_pipeline = {
    {MorphOp::erode, StructuringElement::box(7, 7), 1},
    {MorphOp::dilate, StructuringElement::box(7, 7), 4},
};

Mask cpu_video_pipeline(const Mask& frame) {
  return dilate(erode(frame, StructuringElement::box(7, 7), 1, Backend::cpu), StructuringElement::box(7, 7), 4,
                Backend::cpu);
}

}  // namespace

int main(int argc, char** argv) {
  int frames = 64, batch = 16, reps = 30;
  std::string json, save_volume;  // --json: the record (none without it)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--frames") frames = std::stoi(argv[i + 1]);
    else if (a == "--batch") batch = std::stoi(argv[i + 1]);
    else if (a == "--reps") reps = std::stoi(argv[i + 1]);
    else if (a == "--json") json = argv[i + 1];
    else if (a == "--save-volume") save_volume = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_morph_cuda [--frames N] [--batch B] [--reps R] [--json PATH] [--save-volume RAW]\n");
      return 2;
    }
  }
  if (!bench::record_path_usable("bench_morph_cuda", json)) return 2;
  if (!has_cuda_device()) {
    std::fprintf(stderr, "bench_morph_cuda: %s\n", cuda_device_description().c_str());
    return 1;
  }
  const Shape frame{3840, 2160, 1};
  const std::size_t fb = std::size_t(frame.voxels());
  const int distinct = std::min(frames, 16);  // distinct noise frames (p = 0.5), cycled
  std::vector<uint8_t> host(fb * std::size_t(frames));
  for (int f = 0; f < distinct; ++f) {
    const Mask m = generate_noise(frame, 0.5, uint64_t(f + 1));
    for (int g = f; g < frames; g += distinct) std::memcpy(host.data() + std::size_t(g) * fb, m.data(), fb);
  }
  std::vector<Mask> expected;  // the CPU's answers for the distinct frames
  for (int f = 0; f < distinct; ++f) {
    Mask m(frame);
    std::memcpy(m.data(), host.data() + std::size_t(f) * fb, fb);
    expected.push_back(cpu_video_pipeline(m));
  }
  auto matches = [&](const uint8_t* out, int count) {
    for (int f = 0; f < count; ++f)
      if (std::memcmp(out + std::size_t(f) * fb, expected[std::size_t(f % distinct)].data(), fb) != 0) return false;
    return true;
  };

  // Resident: batches of `batch` frames, and single frames.
  struct Resident {
    int batch;
    double ms_per_launch, fps;
    bool correct;
  };
  std::vector<Resident> resident;
  for (int b : {batch, 1}) {
    cuda::PipelineConfig config;
    config.frame = frame;
    config.steps = video_pipeline;
    config.batch = b;
    config.slots = 1;
    cuda::FramePipeline pipeline(config);
    const auto s = static_cast<cudaStream_t>(pipeline.stream());
    uint8_t *d_in = nullptr, *d_out = nullptr;
    CHECK_CUDA(cudaMalloc(&d_in, fb * b));
    CHECK_CUDA(cudaMalloc(&d_out, fb * b));
    CHECK_CUDA(cudaMemcpy(d_in, host.data(), fb * b, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());  // the DMA from pageable memory has landed
    const double ms = time_ms(s, 5, reps, [&] { pipeline.apply_async(d_in, d_out, b); });
    std::vector<uint8_t> out(fb * b);
    CHECK_CUDA(cudaMemcpy(out.data(), d_out, out.size(), cudaMemcpyDeviceToHost));
    resident.push_back({b, ms, 1000.0 * b / ms, matches(out.data(), b)});
    cudaFree(d_in);
    cudaFree(d_out);
  }

  // Streamed from host memory and back: pinned (DMA straight from the caller's frames) and
  // pageable (staged through the pipeline's pinned buffers).
  struct Streamed {
    std::string memory;
    double fps;
    bool correct;
  };
  std::vector<Streamed> streamed;
  {
    cuda::PipelineConfig config;
    config.frame = frame;
    config.steps = video_pipeline;
    config.batch = batch;
    config.slots = 3;
    cuda::FramePipeline pipeline(config);
    cuda::PinnedBuffer pin_in(host.size()), pin_out(host.size());
    std::memcpy(pin_in.data(), host.data(), host.size());
    std::vector<uint8_t> page_out(host.size());
    for (bool pinned : {true, false}) {
      const uint8_t* in = pinned ? pin_in.data() : host.data();
      uint8_t* out = pinned ? pin_out.data() : page_out.data();
      std::memset(out, 0xAB, host.size());
      pipeline.process(in, out, frames);  // warm-up: graphs captured, pages touched
      std::vector<double> fps;
      for (int r = 0; r < std::max(3, reps / 5); ++r) fps.push_back(pipeline.process(in, out, frames).frames_per_second());
      streamed.push_back({pinned ? "pinned" : "pageable", median(fps), matches(out, frames)});
    }
  }

  // 3D: 512³ blobs (porosity 0.4) dilated by a ball of radius 10, resident.
  const Mask volume = generate_blobs({512, 512, 512}, 0.4, 1.0, 1);
  if (!save_volume.empty()) write_raw(save_volume, volume);
  double ball_ms = 0;
  bool ball_correct = false;
  {
    cuda::PipelineConfig config;
    config.frame = volume.shape();
    config.steps = {{MorphOp::dilate, StructuringElement::ball(10), 1}};
    config.slots = 1;
    cuda::FramePipeline pipeline(config);
    const auto s = static_cast<cudaStream_t>(pipeline.stream());
    uint8_t *d_in = nullptr, *d_out = nullptr;
    CHECK_CUDA(cudaMalloc(&d_in, volume.voxels()));
    CHECK_CUDA(cudaMalloc(&d_out, volume.voxels()));
    CHECK_CUDA(cudaMemcpy(d_in, volume.data(), volume.voxels(), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());  // the DMA from pageable memory has landed
    ball_ms = time_ms(s, 3, std::max(5, reps / 2), [&] { pipeline.apply_async(d_in, d_out, 1); });
    Mask out(volume.shape());
    CHECK_CUDA(cudaMemcpy(out.data(), d_out, volume.voxels(), cudaMemcpyDeviceToHost));
    ball_correct = out.values() == dilate(volume, StructuringElement::ball(10), 1, Backend::cpu).values();
    cudaFree(d_in);
    cudaFree(d_out);
  }

  const std::string gpu = cuda_device_description();
  std::printf("GPU: %s   timer: CUDA events, median after warm-up\n", gpu.c_str());
  std::printf("4K pipeline (erode 7x7 x1, dilate 7x7 x4) on 3840x2160 uint8 frames:\n");
  for (const auto& r : resident)
    std::printf("  resident, batch %3d: %8.3f ms per launch = %9.0f FPS   %s\n", r.batch, r.ms_per_launch, r.fps,
                r.correct ? "equal to CPU" : "DIFFERS FROM CPU");
  for (const auto& s : streamed)
    std::printf("  host->GPU->host, %-8s (batch %d, 3 slots, %d frames): %7.0f FPS   %s\n", s.memory.c_str(), batch,
                frames, s.fps, s.correct ? "equal to CPU" : "DIFFERS FROM CPU");
  std::printf("512^3 blobs dilated by ball r=10, resident: %.3f ms   %s\n", ball_ms,
              ball_correct ? "equal to CPU" : "DIFFERS FROM CPU");

  std::ostringstream o;
  o << "{\n  \"benchmark\": \"morph_cuda\",\n  \"version\": \"" << version_string() << "\",\n  \"gpu\": \"" << gpu
    << "\",\n  \"timer\": \"CUDA events, median after warm-up\",\n  \"frame\": [3840, 2160],\n"
    << "  \"pipeline\": \"erode box 7x7 x1, dilate box 7x7 x4\",\n  \"frames\": " << frames << ",\n  \"resident\": [";
  for (std::size_t i = 0; i < resident.size(); ++i)
    o << (i ? ", " : "") << "{\"batch\": " << resident[i].batch << ", \"ms_per_launch\": " << resident[i].ms_per_launch
      << ", \"fps\": " << resident[i].fps << ", \"equal_to_cpu\": " << (resident[i].correct ? "true" : "false") << "}";
  o << "],\n  \"streamed\": [";
  for (std::size_t i = 0; i < streamed.size(); ++i)
    o << (i ? ", " : "") << "{\"host_memory\": \"" << streamed[i].memory << "\", \"batch\": " << batch
      << ", \"slots\": 3, \"fps\": " << streamed[i].fps << ", \"equal_to_cpu\": " << (streamed[i].correct ? "true" : "false")
      << "}";
  o << "],\n  \"ball_512\": {\"shape\": [512, 512, 512], \"radius\": 10, \"porosity\": 0.4, \"ms\": " << ball_ms
    << ", \"equal_to_cpu\": " << (ball_correct ? "true" : "false") << "}\n}\n";
  const bool ok = ball_correct && std::all_of(resident.begin(), resident.end(), [](const Resident& r) { return r.correct; }) &&
                  std::all_of(streamed.begin(), streamed.end(), [](const Streamed& s) { return s.correct; });
  const int written = bench::write_record("bench_morph_cuda", json, o.str());
  return ok && written == 0 ? 0 : 1;
}
