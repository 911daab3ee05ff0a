// The CUDA backend against the CPU backend through the device-resident context: awkward
// shapes, every boundary, anisotropic spacing, poisoned outputs; a long loop that must not
// grow; clear errors.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "poreforge/cuda_engine.hpp"
#include "poreforge/edt.hpp"
#include "poreforge/error.hpp"
#include "poreforge/local_thickness.hpp"
#include "poreforge/psd.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

// A context's configuration by field name (the tuning fields left unset).
cuda::ContextConfig context_config(Shape shape, Spacing spacing, Boundary boundary, std::vector<double> psd_edges,
                                   double centre_capacity = 0.125) {
  cuda::ContextConfig c;
  c.shape = shape;
  c.spacing = spacing;
  c.boundary = boundary;
  c.psd_edges = std::move(psd_edges);
  c.centre_capacity = centre_capacity;
  return c;
}

#define CUDA_OK(call) REQUIRE((call) == cudaSuccess)

template <class T>
struct Device {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit Device(std::size_t count) : n(count) { CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T))); }
  ~Device() { cudaFree(ptr); }
  // NaN floats, UINT32_MAX; on the context's stream, which does not wait for the default one.
  void poison(void* stream) {
    CUDA_OK(cudaMemsetAsync(ptr, 0xFF, n * sizeof(T), static_cast<cudaStream_t>(stream)));
  }
  // cudaMemcpy from pageable memory may return before its DMA lands, and the context's
  // non-blocking stream does not wait for the default stream: wait for the device.
  void upload(const std::vector<T>& h) {
    CUDA_OK(cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    REQUIRE(cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return h;
  }
};

bool valid_for_thickness(const Mask& m, Boundary b) {
  const int64_t phase = count_phase(m);
  if (phase == 0) return false;
  if (phase < m.voxels()) return true;
  const Shape s = m.shape();
  return b == Boundary::wall && (s.nx > 1 || s.ny > 1 || s.nz > 1);
}

// Every output of one volume, CUDA (through a context, outputs poisoned) against the CPU.
void check_parity(const Mask& phase, Boundary boundary) {
  CAPTURE(to_string(phase.shape()));
  CAPTURE(to_string(boundary));
  CAPTURE(phase.spacing().x);
  CAPTURE(phase.spacing().y);
  CAPTURE(phase.spacing().z);
  const int64_t n = phase.voxels();
  const bool iso = phase.spacing().isotropic();
  const bool valid = valid_for_thickness(phase, boundary);
  const Bins bins = Bins::linear(0.0, 12.0, 9);
  cuda::ContextConfig config = context_config(phase.shape(), phase.spacing(), boundary, bins.edges(), 1.0);
  cuda::ThicknessContext context(config);
  Device<uint8_t> mask(n);
  mask.upload(phase.values());

  if (iso) {
    Device<uint32_t> d2(n);
    d2.poison(context.stream());
    context.squared_distance_async(mask.ptr, d2.ptr);
    CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(context.stream())));
    if (valid) CHECK(d2.download() == squared_distance_voxels(phase, boundary, Backend::cpu).values());
    else if (count_phase(phase) > 0) CHECK_THROWS_AS(context.synchronize(), InputError);  // no background
  }
  Device<float> dist(n);
  dist.poison(context.stream());
  context.distance_async(mask.ptr, dist.ptr);
  CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(context.stream())));
  if (valid) CHECK(dist.download() == distance_transform(phase, boundary, Backend::cpu).values());
  else if (count_phase(phase) > 0) CHECK_THROWS_AS(context.synchronize(), InputError);

  Device<float> lt(n);
  lt.poison(context.stream());
  context.thickness_async(mask.ptr, lt.ptr);
  if (!valid) {
    if (count_phase(phase) > 0) CHECK_THROWS_AS(context.synchronize(), InputError);
    return;
  }
  context.synchronize();
  const auto want = local_thickness(phase, boundary, Backend::cpu);
  const auto got = lt.download();
  auto mismatches = [&](const std::vector<float>& map) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += std::memcmp(&map[i], &want[i], sizeof(float)) != 0;
    return count;
  };
  CHECK(mismatches(got) == 0);
  // The map from a context made with `other`, against the CPU's.
  auto check_map = [&](const cuda::ContextConfig& other) {
    cuda::ThicknessContext ctx(other);
    lt.poison(ctx.stream());
    ctx.thickness_async(mask.ptr, lt.ptr);
    ctx.synchronize();
    CHECK(mismatches(lt.download()) == 0);
  };
  // The narrow radius bands of the large volumes (by default 2 % only above 2^28 voxels).
  {
    cuda::ContextConfig other = config;
    other.band_step = 1.02;
    check_map(other);
  }

  // The PSD-only path: the map's bins, and bins whose first edge leaves the smallest balls
  // out (they must still count as phase) and whose last edge some balls pass.
  auto check_psd = [&](cuda::ThicknessContext& ctx, const Bins& b) {
    CAPTURE(b.edges().front());
    CAPTURE(b.edges().back());
    Device<int64_t> counts(ctx.psd_count_entries());
    counts.poison(ctx.stream());
    ctx.psd_async(mask.ptr, counts.ptr);
    ctx.synchronize();
    const auto c = counts.download();
    const std::size_t e = b.edges().size();
    const PsdCounts gpu_counts{std::vector<int64_t>(c.begin(), c.begin() + e), c[e], c[e + 1], {}};
    // The definition, counted on the CPU's map.
    std::vector<int64_t> at_least(e, 0);
    int64_t above = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!phase.values()[i]) continue;
      for (std::size_t j = 0; j < e; ++j) at_least[j] += double(want[i]) >= b.edges()[j];
      above += double(want[i]) > b.edges().back();
    }
    CHECK(gpu_counts.at_least == at_least);
    CHECK(gpu_counts.above == above);
    CHECK(gpu_counts.phase_voxels == count_phase(phase));
    const auto cpu = pore_size_distribution(phase, boundary, b, Backend::cpu);
    const auto gpu = psd_from_counts(gpu_counts, b);
    CHECK(gpu.cumulative == cpu.cumulative);
    CHECK(gpu.fraction == cpu.fraction);
  };
  check_psd(context, bins);
  // A grid of two blocks — 16 warps, so that a small volume's classes also have more tasks
  // than warps: the map's dealt shares each hold several, and the PSD path's claims' counter
  // hands most of them out.
  {
    cuda::ContextConfig few = config;
    few.painter_blocks = 2;
    check_map(few);
    cuda::ThicknessContext small_grid(few);
    check_psd(small_grid, bins);
  }
  const Bins narrow = Bins::logarithmic(1.5, 2.5, 5);
  cuda::ThicknessContext narrow_context(context_config(phase.shape(), phase.spacing(), boundary, narrow.edges(), 1.0));
  check_psd(narrow_context, narrow);
}

}  // namespace

TEST_CASE("local_thickness.cuda.parity_awkward_shapes" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shapes[] = {{1, 1, 1}, {7, 300, 2}, {129, 64, 33}, {1, 1, 77}, {300, 7, 1}, {64, 48, 40}};
  const Spacing spacings[] = {{1, 1, 1}, {0.5, 0.5, 0.5}, {1.0, 1.3, 0.7}};
  int k = 0;
  for (const Shape& shape : shapes)
    for (Boundary boundary : {Boundary::open, Boundary::wall, Boundary::periodic})
      for (const Spacing& spacing : spacings) {
        Mask m = testing::random_volume(shape, k % 3, 0.3 + 0.1 * (k % 5), seed + k);
        ++k;
        m.set_spacing(spacing);
        check_parity(m, boundary);
        check_parity(complement(m), boundary);
      }
}

TEST_CASE("local_thickness.cuda.parity_250" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Mask blobs = generate_blobs({250, 250, 250}, 0.4, 1.0, seed);
  for (Boundary boundary : {Boundary::open, Boundary::periodic}) check_parity(blobs, boundary);
  Mask aniso = generate_blobs({250, 250, 250}, 0.5, 2.0, seed + 1);
  aniso.set_spacing({1.0, 1.0, 2.5});
  check_parity(aniso, Boundary::wall);
}

TEST_CASE("local_thickness.cuda.loop_stays_flat" * PF_GPU_DECORATORS) {
  // The first post's loop slowed from 0.05 s to 1.8 s a call. 10,000 evaluations through one
  // context: the device memory in use must not move; per-call times are reported, not asserted.
  const Mask blobs = generate_blobs({96, 96, 96}, 0.4, 1.0, testing::fresh_seed());
  const Bins bins = Bins::linear(0.0, 10.0, 20);
  cuda::ThicknessContext context(context_config(blobs.shape(), {}, Boundary::periodic, bins.edges()));
  const cudaStream_t s = static_cast<cudaStream_t>(context.stream());
  Device<uint8_t> mask(blobs.voxels());
  mask.upload(blobs.values());
  Device<int64_t> counts(context.psd_count_entries());
  context.psd_async(mask.ptr, counts.ptr);  // warm-up: captures the graph
  context.synchronize();
  // This process's device memory: the stream-ordered pool the context allocates from (free
  // memory on the card moves with other processes; this does not).
  cudaMemPool_t pool = nullptr;
  CUDA_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
  auto pool_bytes = [&] {
    uint64_t used = 0, reserved = 0;
    REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess);
    REQUIRE(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess);
    return std::make_pair(used, reserved);
  };
  const auto before = pool_bytes();

  constexpr int calls = 10000, window = 100;
  std::vector<cudaEvent_t> events(2 * window * 2);
  for (auto& e : events) CUDA_OK(cudaEventCreate(&e));
  std::vector<float> first, last;
  for (int i = 0; i < calls; ++i) {
    const bool timed_first = i < window, timed_last = i >= calls - window;
    const int slot = timed_first ? 2 * i : timed_last ? 2 * window + 2 * (i - (calls - window)) : -1;
    if (slot >= 0) CUDA_OK(cudaEventRecord(events[slot], s));
    context.psd_async(mask.ptr, counts.ptr);
    if (slot >= 0) CUDA_OK(cudaEventRecord(events[slot + 1], s));
  }
  context.synchronize();
  for (int i = 0; i < window; ++i) {
    float a = 0, b = 0;
    CUDA_OK(cudaEventElapsedTime(&a, events[2 * i], events[2 * i + 1]));
    CUDA_OK(cudaEventElapsedTime(&b, events[2 * window + 2 * i], events[2 * window + 2 * i + 1]));
    first.push_back(a);
    last.push_back(b);
  }
  for (auto& e : events) cudaEventDestroy(e);
  std::sort(first.begin(), first.end());
  std::sort(last.begin(), last.end());
  const auto after = pool_bytes();
  MESSAGE("96^3 PSD-only evaluation: median of the first 100 calls " << first[window / 2] << " ms, of the last 100 "
                                                                     << last[window / 2] << " ms; pool bytes in use "
                                                                     << before.first << " -> " << after.first
                                                                     << ", reserved " << before.second << " -> "
                                                                     << after.second);
  CHECK(after.first == before.first);
  CHECK(after.second == before.second);
  const auto c = counts.download();
  CHECK(c.back() == count_phase(blobs));  // the last evaluation still counts every phase voxel
}

// A workspace kept across images whose shape, spacing, boundary, bins and centre count change
// and come back gives each image the one-shot result; white noise has more ball centres than
// the default room, so the workspace grows its context once and keeps it.
TEST_CASE("local_thickness.cuda.workspace_across_images" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  cuda::Workspace workspace;
  struct Image {
    Mask mask;
    Boundary boundary;
  };
  const Bins bins = Bins::linear(0.5, 6.0, 7), other = Bins::linear(1.0, 4.0, 3);
  std::vector<Image> images;
  images.push_back({testing::random_volume({33, 20, 17}, 1, 0.4, seed), Boundary::open});
  images.push_back({testing::random_volume({33, 20, 17}, 1, 0.3, seed + 1), Boundary::periodic});
  images.push_back({testing::random_volume({33, 20, 17}, 0, 0.6, seed + 2), Boundary::open});  // many centres
  images.push_back({testing::random_volume({16, 24, 9}, 2, 0.4, seed + 3), Boundary::wall});
  images.push_back({testing::random_volume({33, 20, 17}, 1, 0.4, seed + 4), Boundary::open});
  images.back().mask.set_spacing({1.0, 2.0, 0.5});
  for (std::size_t k = 0; k < images.size(); ++k) {
    CAPTURE(k);
    const Mask& m = images[k].mask;
    const Boundary b = images[k].boundary;
    CHECK(workspace.local_thickness(m, b).values() == local_thickness(m, b, Backend::cpu).values());
    CHECK(workspace.distance_transform(m, b).values() == distance_transform(m, b, Backend::cpu).values());
    for (const Bins* set : {&bins, &other}) {
      const PoreSizeDistribution want = pore_size_distribution(m, b, *set, Backend::cpu);
      CHECK(psd_from_counts(workspace.psd_counts(m, b, *set), *set).fraction == want.fraction);
    }
  }
  CHECK_THROWS_WITH_AS(workspace.local_thickness(Mask({8, 8, 8}), Boundary::open), doctest::Contains("phase is empty"),
                       InputError);
}

// The device-memory calls (CuPy's path) on 20 pairs of buffers, more than the graph cache keeps,
// then on the first pair again: every map equals the CPU's, and the PSD of a device mask equals
// the host path's. Last, the mask written on a stream of the caller's own, kept busy, and the
// call made at once: the engine waits for that stream's work, so the map is still right.
TEST_CASE("local_thickness.cuda.workspace_on_device_buffers" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const Shape shape{24, 20, 18};
  const Mask m = testing::random_volume(shape, 1, 0.4, seed);
  const std::vector<float> want = local_thickness(m, Boundary::periodic, Backend::cpu).values();
  std::vector<std::unique_ptr<Device<uint8_t>>> masks;
  std::vector<std::unique_ptr<Device<float>>> maps;
  cuda::Workspace workspace;
  for (int k = 0; k < 20; ++k) {
    masks.push_back(std::make_unique<Device<uint8_t>>(std::size_t(m.voxels())));
    maps.push_back(std::make_unique<Device<float>>(std::size_t(m.voxels())));
    masks.back()->upload(m.values());
    workspace.local_thickness(masks.back()->ptr, maps.back()->ptr, shape, m.spacing(), Boundary::periodic, nullptr);
    CHECK(maps.back()->download() == want);
  }
  maps.front()->poison(nullptr);
  CUDA_OK(cudaDeviceSynchronize());
  workspace.local_thickness(masks.front()->ptr, maps.front()->ptr, shape, m.spacing(), Boundary::periodic, nullptr);
  CHECK(maps.front()->download() == want);
  workspace.distance_transform(masks.front()->ptr, maps.front()->ptr, shape, m.spacing(), Boundary::periodic,
                               nullptr);
  CHECK(maps.front()->download() == distance_transform(m, Boundary::periodic, Backend::cpu).values());
  const Bins bins = Bins::linear(0.5, 5.0, 6);
  CHECK(psd_from_counts(workspace.psd_counts(masks.front()->ptr, shape, m.spacing(), Boundary::periodic, bins,
                                             nullptr),
                        bins)
            .fraction == pore_size_distribution(m, Boundary::periodic, bins, Backend::cpu).fraction);

  cudaStream_t caller = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&caller, cudaStreamNonBlocking));
  Device<uint8_t>& late = *masks[1];
  CUDA_OK(cudaMemsetAsync(late.ptr, 0, late.n, caller));
  Device<float> busy(std::size_t(64) << 20);  // 256 MiB cleared 20 times ahead of the mask
  for (int k = 0; k < 20; ++k) CUDA_OK(cudaMemsetAsync(busy.ptr, k, busy.n * sizeof(float), caller));
  CUDA_OK(cudaMemcpyAsync(late.ptr, masks.front()->ptr, late.n, cudaMemcpyDeviceToDevice, caller));
  maps[1]->poison(caller);
  workspace.local_thickness(late.ptr, maps[1]->ptr, shape, m.spacing(), Boundary::periodic, caller);
  CHECK(maps[1]->download() == want);
  CUDA_OK(cudaStreamSynchronize(caller));
  CUDA_OK(cudaStreamDestroy(caller));
}

TEST_CASE("local_thickness.cuda.errors" * PF_GPU_DECORATORS) {
  // A context the device cannot hold is refused before it allocates, naming both sizes, as a
  // memory limit (the module's MemoryError). One such context takes ~130 GB, which a 141 GB
  // card holds: contexts are made until one does not fit.
  {
    cuda::ContextConfig huge = context_config({1300, 1300, 2400}, {1.0, 1.0, 1.5}, Boundary::open, {1.0, 2.0}, 1.0);
    std::vector<std::unique_ptr<cuda::ThicknessContext>> held;
    std::string message;
    try {
      for (int k = 0; k < 4; ++k) held.push_back(std::make_unique<cuda::ThicknessContext>(huge));
    } catch (const MemoryLimitError& e) {
      message = e.what();
    }
    CHECK(held.size() < 4);
    CHECK(message.find("MiB of device memory; the device has") != std::string::npos);
  }
  // Centres beyond capacity are reported, never written out of bounds.
  const Mask noise = generate_noise({64, 64, 64}, 0.9, 7);
  cuda::ThicknessContext small(context_config(noise.shape(), {}, Boundary::open, {}, 0.001));
  Device<uint8_t> mask(noise.voxels());
  mask.upload(noise.values());
  Device<float> lt(noise.voxels());
  small.thickness_async(mask.ptr, lt.ptr);
  CHECK_THROWS_WITH_AS(small.synchronize(), doctest::Contains("capacity"), RuntimeError);
  // The one-shot path retries with room for every centre.
  CHECK(local_thickness(noise, Boundary::open, Backend::cuda).values() ==
        local_thickness(noise, Boundary::open, Backend::cpu).values());
  CHECK_THROWS_AS(cuda::ThicknessContext(context_config({0, 4, 4}, {}, Boundary::open, {})), InputError);
  for (double step : {1.0, 0.5, 4.5}) {
    cuda::ContextConfig bad = context_config({8, 8, 8}, {}, Boundary::open, {});
    bad.band_step = step;
    CHECK_THROWS_WITH_AS(cuda::ThicknessContext{bad}, doctest::Contains("band step"), InputError);
  }
  for (int blocks : {0, -3, (1 << 20) + 1}) {
    cuda::ContextConfig bad = context_config({8, 8, 8}, {}, Boundary::open, {});
    bad.painter_blocks = blocks;
    CHECK_THROWS_WITH_AS(cuda::ThicknessContext{bad}, doctest::Contains("painter blocks"), InputError);
  }
}
