// The swap scorer (cuda::SwapScorer): every candidate's counts, scored locally against the same
// structure, equal a from-scratch evaluation of the structure with that swap made (the engine's
// PSD on the device, itself equal to the CPU's), on every boundary, in 3D, 2D and a periodic
// volume thinner than its boxes; each committed swap leaves counts equal to a from-scratch
// evaluation of the new structure. 10,000 candidates a boundary (POREFORGE_SWAP_CANDIDATES sets
// another number).
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <random>
#include <vector>

#include "poreforge/cuda_engine.hpp"
#include "poreforge/error.hpp"
#include "poreforge/generators.hpp"
#include "poreforge/psd.hpp"
#include "support/backends.hpp"
#include "support/random.hpp"

using namespace poreforge;

namespace {

#define CUDA_OK(call) REQUIRE((call) == cudaSuccess)

// The engine's full PSD of the device mask (the reference), into host counts.
std::vector<int64_t> full_counts(cuda::ThicknessContext& engine, const uint8_t* d_mask, int64_t* d_counts,
                                 std::size_t entries) {
  engine.psd_async(d_mask, d_counts);
  std::vector<int64_t> out(entries);
  CUDA_OK(cudaMemcpyAsync(out.data(), d_counts, entries * sizeof(int64_t), cudaMemcpyDeviceToHost,
                          static_cast<cudaStream_t>(engine.stream())));
  engine.synchronize();
  return out;
}

// The engine that gives the reference: a full PSD of `mask`'s shape and bins.
cuda::ContextConfig reference_config(const Mask& mask, Boundary boundary, const Bins& bins) {
  cuda::ContextConfig config;
  config.shape = mask.shape();
  config.spacing = mask.spacing();
  config.boundary = boundary;
  config.psd_edges = bins.edges();
  config.centre_capacity = 1.0;
  return config;
}

void set_voxel(uint8_t* d_mask, int64_t i, uint8_t value, void* stream) {
  CUDA_OK(cudaMemcpyAsync(d_mask + i, &value, 1, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
  CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void check_scorer(const Mask& start, Boundary boundary, const Bins& bins, int candidates_in_all, uint64_t seed) {
  CAPTURE(to_string(start.shape()));
  CAPTURE(to_string(boundary));
  constexpr int kMost = 16;
  const int64_t n = start.voxels();
  Mask mask = start;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint8_t *d_mask = nullptr, *d_probe = nullptr;
  int64_t *d_swaps = nullptr, *d_delta = nullptr, *d_full = nullptr;
  int32_t* d_ints = nullptr;  // [0] candidates, [1] chosen
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_mask), std::size_t(n)));
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_probe), std::size_t(n)));
  CUDA_OK(cudaMemcpy(d_mask, mask.data(), std::size_t(n), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  {
    cuda::SwapScorer scorer(d_mask, mask.shape(), mask.spacing(), boundary, bins, kMost, stream);
    const std::size_t entries = std::size_t(scorer.count_entries());
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_swaps), 2 * kMost * sizeof(int64_t)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_delta), kMost * entries * sizeof(int64_t)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_full), entries * sizeof(int64_t)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_ints), 2 * sizeof(int32_t)));
    cuda::ThicknessContext engine(reference_config(mask, boundary, bins));

    auto committed = [&] {
      std::vector<int64_t> c(entries);
      CUDA_OK(cudaMemcpyAsync(c.data(), scorer.counts(), entries * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
      scorer.synchronize();
      return c;
    };
    CUDA_OK(cudaMemcpy(d_probe, mask.data(), std::size_t(n), cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    REQUIRE(committed() == full_counts(engine, d_probe, d_full, entries));

    std::mt19937_64 rng(seed);
    std::vector<int64_t> pore, solid;
    for (int64_t i = 0; i < n; ++i) (mask[std::size_t(i)] ? pore : solid).push_back(i);
    int scored = 0, commits = 0;
    for (int step = 0; scored < candidates_in_all; ++step) {
      const int k = 1 + int(rng() % kMost);  // candidates this time
      std::vector<int64_t> swaps(2 * std::size_t(k));
      std::vector<std::size_t> from(2 * std::size_t(k));
      for (int c = 0; c < k; ++c) {
        from[2 * c] = std::size_t(rng() % pore.size());
        from[2 * c + 1] = std::size_t(rng() % solid.size());
        swaps[2 * std::size_t(c)] = pore[from[2 * c]];
        swaps[2 * std::size_t(c) + 1] = solid[from[2 * c + 1]];
      }
      const int chosen = step % 5 == 4 ? -1 : int(rng() % uint64_t(k));  // now and then none
      const int32_t ints[2] = {k, chosen};
      CUDA_OK(cudaMemcpyAsync(d_swaps, swaps.data(), swaps.size() * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
      CUDA_OK(cudaMemcpyAsync(d_ints, ints, sizeof(ints), cudaMemcpyHostToDevice, stream));
      scorer.score_async(d_swaps, d_ints, d_delta);
      std::vector<int64_t> delta(std::size_t(k) * entries);
      CUDA_OK(cudaMemcpyAsync(delta.data(), d_delta, delta.size() * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
      const std::vector<int64_t> base = committed();
      // Each candidate against the engine's full evaluation of the structure with its swap.
      CUDA_OK(cudaMemcpy(d_probe, mask.data(), std::size_t(n), cudaMemcpyHostToDevice));
      CUDA_OK(cudaDeviceSynchronize());
      for (int c = 0; c < k; ++c) {
        CAPTURE(step);
        CAPTURE(c);
        set_voxel(d_probe, swaps[2 * std::size_t(c)], 0, engine.stream());
        set_voxel(d_probe, swaps[2 * std::size_t(c) + 1], 1, engine.stream());
        const std::vector<int64_t> want = full_counts(engine, d_probe, d_full, entries);
        set_voxel(d_probe, swaps[2 * std::size_t(c)], 1, engine.stream());
        set_voxel(d_probe, swaps[2 * std::size_t(c) + 1], 0, engine.stream());
        std::vector<int64_t> got(entries);
        for (std::size_t e = 0; e < entries; ++e) got[e] = base[e] + delta[std::size_t(c) * entries + e];
        REQUIRE(got == want);
      }
      scored += k;
      // The chosen one flipped in the caller's mask and committed (its counts checked anew).
      if (chosen >= 0) {
        const int64_t a = swaps[2 * std::size_t(chosen)], b = swaps[2 * std::size_t(chosen) + 1];
        set_voxel(d_mask, a, 0, stream);
        set_voxel(d_mask, b, 1, stream);
        mask[std::size_t(a)] = 0;
        mask[std::size_t(b)] = 1;
        std::swap(pore[from[2 * std::size_t(chosen)]], solid[from[2 * std::size_t(chosen) + 1]]);
        ++commits;
      }
      scorer.commit_async(d_ints + 1);
      if (chosen >= 0) {
        CUDA_OK(cudaMemcpy(d_probe, mask.data(), std::size_t(n), cudaMemcpyHostToDevice));
        CUDA_OK(cudaDeviceSynchronize());
        REQUIRE(committed() == full_counts(engine, d_probe, d_full, entries));
      }
    }
    CHECK(commits > 0);
  }
  cudaFree(d_mask);
  cudaFree(d_probe);
  cudaFree(d_swaps);
  cudaFree(d_delta);
  cudaFree(d_full);
  cudaFree(d_ints);
  cudaStreamDestroy(stream);
}

// Each swap (a voxel leaving the phase, one joining it) scored alone and committed, its counts
// and the committed ones against the engine's full evaluation.
void check_committed_swaps(Mask mask, Boundary boundary, const Bins& bins, const std::vector<std::array<int64_t, 2>>& swaps) {
  const int64_t n = mask.voxels();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint8_t* d_mask = nullptr;
  int64_t *d_swap = nullptr, *d_delta = nullptr, *d_full = nullptr;
  int32_t* d_ints = nullptr;  // [0] candidates (1), [1] chosen (0)
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_mask), std::size_t(n)));
  CUDA_OK(cudaMemcpy(d_mask, mask.data(), std::size_t(n), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  {
    cuda::SwapScorer scorer(d_mask, mask.shape(), mask.spacing(), boundary, bins, 1, stream);
    const std::size_t entries = std::size_t(scorer.count_entries());
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_swap), 2 * sizeof(int64_t)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_delta), entries * sizeof(int64_t)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_full), entries * sizeof(int64_t)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d_ints), 2 * sizeof(int32_t)));
    const int32_t ints[2] = {1, 0};
    CUDA_OK(cudaMemcpy(d_ints, ints, sizeof(ints), cudaMemcpyHostToDevice));
    cuda::ThicknessContext engine(reference_config(mask, boundary, bins));
    for (std::size_t i = 0; i < swaps.size(); ++i) {
      CAPTURE(i);
      const auto& [leaving, joining] = swaps[i];
      REQUIRE(mask[std::size_t(leaving)] == 1);
      REQUIRE(mask[std::size_t(joining)] == 0);
      CUDA_OK(cudaMemcpyAsync(d_swap, swaps[i].data(), 2 * sizeof(int64_t), cudaMemcpyHostToDevice, stream));
      std::vector<int64_t> before(entries), delta(entries);
      CUDA_OK(cudaMemcpyAsync(before.data(), scorer.counts(), entries * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
      scorer.score_async(d_swap, d_ints, d_delta);
      CUDA_OK(cudaMemcpyAsync(delta.data(), d_delta, entries * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
      scorer.synchronize();
      mask[std::size_t(leaving)] = 0;
      mask[std::size_t(joining)] = 1;
      set_voxel(d_mask, leaving, 0, stream);
      set_voxel(d_mask, joining, 1, stream);
      const std::vector<int64_t> want = full_counts(engine, d_mask, d_full, entries);
      for (std::size_t e = 0; e < entries; ++e) before[e] += delta[e];
      CHECK(before == want);
      scorer.commit_async(d_ints + 1);
      std::vector<int64_t> now(entries);
      CUDA_OK(cudaMemcpyAsync(now.data(), scorer.counts(), entries * sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
      scorer.synchronize();
      CHECK(now == want);
    }
  }
  cudaFree(d_mask);
  cudaFree(d_swap);
  cudaFree(d_delta);
  cudaFree(d_full);
  cudaFree(d_ints);
  cudaStreamDestroy(stream);
}

}  // namespace

TEST_CASE("psd.cuda.swap_scorer_equals_full" * PF_GPU_DECORATORS) {
  const uint64_t seed = testing::fresh_seed();
  CAPTURE(seed);
  const char* asked = std::getenv("POREFORGE_SWAP_CANDIDATES");
  const int candidates = asked ? std::atoi(asked) : 10000;
  const Bins bins = Bins::linear(0.5, 6.5, 12);
  for (Boundary b : {Boundary::open, Boundary::wall, Boundary::periodic}) {
    check_scorer(generate_blobs({72, 64, 60}, 0.3, 1.5, seed), b, bins, candidates, seed + 1);
    check_scorer(generate_blobs({150, 140, 1}, 0.35, 2.0, seed + 2), b, bins, candidates / 10, seed + 3);
  }
  // Periodic and thinner than the boxes along z: they take the whole axis.
  check_scorer(generate_blobs({64, 64, 10}, 0.3, 1.0, seed + 4), Boundary::periodic, bins, candidates / 10, seed + 5);
  // A spacing of 0.3: radii in physical units, the same counts.
  Mask scaled = generate_blobs({48, 52, 44}, 0.3, 1.5, seed + 6);
  scaled.set_spacing({0.3, 0.3, 0.3});
  check_scorer(scaled, Boundary::wall, Bins::linear(0.15, 2.0, 9), candidates / 10, seed + 7);
}

TEST_CASE("psd.cuda.swap_scorer_refuses" * PF_GPU_DECORATORS) {
  Mask m = generate_blobs({32, 32, 32}, 0.3, 1.5, 1);
  uint8_t* d = nullptr;
  CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&d), std::size_t(m.voxels())));
  CUDA_OK(cudaMemcpy(d, m.data(), std::size_t(m.voxels()), cudaMemcpyHostToDevice));
  CHECK_THROWS_WITH_AS(cuda::SwapScorer(d, m.shape(), {1, 2, 1}, Boundary::open, Bins::linear(1, 4, 4), 8, nullptr),
                       doctest::Contains("isotropic"), InputError);
  CUDA_OK(cudaMemset(d, 0, std::size_t(m.voxels())));
  CHECK_THROWS_WITH_AS(cuda::SwapScorer(d, m.shape(), {}, Boundary::open, Bins::linear(1, 4, 4), 8, nullptr),
                       doctest::Contains("empty"), InputError);
  cudaFree(d);
}

// Distances that grow past what their 4×4×4 brick held (psd.cpu.local_evaluation_edges' case):
// solid specks in a wide pore taken out one at a time, each followed by voxels round where it
// was made solid, whose reach runs through the grown distances; the pore's far corner and the
// solid margin give the other voxel of each swap.
TEST_CASE("psd.cuda.swap_scorer_grown_distances" * PF_GPU_DECORATORS) {
  constexpr int64_t kN = 96;
  Mask pore({kN, kN, kN}, {0.1, 0.1, 0.1});
  for (int64_t z = 28; z < 68; ++z)
    for (int64_t y = 28; y < 68; ++y)
      for (int64_t x = 28; x < 68; ++x) pore(x, y, z) = 1;
  const int64_t speck[3][3] = {{47, 48, 46}, {38, 54, 53}, {57, 41, 37}};
  for (const auto& c : speck) pore(c[0], c[1], c[2]) = 0;
  const auto at = [](int64_t x, int64_t y, int64_t z) { return (z * kN + y) * kN + x; };
  const int64_t offsets[6][3] = {{10, 0, 0}, {0, -10, 0}, {0, 0, 10}, {-9, 5, 0}, {0, 7, -8}, {6, 0, -9}};
  std::vector<std::array<int64_t, 2>> swaps;
  int64_t margin = 0;  // solid voxels along the box's first row, joined one after the other
  for (int s = 0; s < 3; ++s) {
    const int64_t* c = speck[s];
    swaps.push_back({at(28 + s, 28, 28), at(c[0], c[1], c[2])});
    for (const auto& o : offsets) swaps.push_back({at(c[0] + o[0], c[1] + o[1], c[2] + o[2]), at(2 + margin++, 2, 2)});
  }
  check_committed_swaps(pore, Boundary::open, Bins::linear(0.05, 2.5, 60), swaps);  // radii to 25 voxels
}
