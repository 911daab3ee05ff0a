// CUDA engine benchmark: EDT, local-thickness map and PSD-only path per evaluation through the
// device-resident context, on blobs (porosity 0.4) at several sizes and the Berea sample.
// Timed with CUDA events after warm-up (median of the repeats), against a device-to-device
// copy of the same volume measured in the same run. Peak device memory is read from
// cudaMemGetInfo around the context and buffers. Writes each mask as raw for the CuPy peer
// (scripts/bench_cupy_peer.py), prints a table and writes JSON.
//
//   bench_engine_cuda [--sizes 128,250,512,1000] [--reps R] [--json PATH] [--volumes DIR]
//                     [--berea PATH|none] [--band-step RATIO]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_timing.cuh"
#include "poreforge/backend.hpp"
#include "poreforge/cuda_engine.hpp"
#include "poreforge/generators.hpp"
#include "bench_record.hpp"
#include "poreforge/io.hpp"

using namespace poreforge;
using bench::time_ms;

namespace {

size_t used_bytes() {
  size_t free = 0, total = 0;
  CHECK_CUDA(cudaMemGetInfo(&free, &total));
  return total - free;
}

struct Row {
  std::string name;
  Shape shape;
  double porosity = 0;
  int64_t centres = 0;
  double copy_ms = 0, edt_ms = 0, lt_ms = 0, psd_ms = 0;
  double lt_bytes_per_voxel = 0, psd_bytes_per_voxel = 0;
};

// Painter settings the command line can force (unset: the engine's defaults), to compare
// variants on the same volumes in one run.
struct Settings {
  std::optional<double> band_step;
};

Row measure(const std::string& name, const Mask& phase, int reps, const Settings& settings) {
  Row row;
  row.name = name;
  row.shape = phase.shape();
  const int64_t n = phase.voxels();
  row.porosity = double(count_phase(phase)) / double(n);
  const int slow = n > 200'000'000 ? 1 : 0;  // fewer repeats for the largest volumes
  const int r = slow ? std::max(3, reps / 4) : reps;
  const std::vector<double> edges = Bins::linear(0.0, 64.0, 32).edges();

  // LT map: the context without the PSD path, the mask and the map (what a caller holds).
  const size_t base = used_bytes();
  uint8_t* d_mask = nullptr;
  float* d_map = nullptr;
  CHECK_CUDA(cudaMalloc(&d_mask, n));
  CHECK_CUDA(cudaMalloc(&d_map, n * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d_mask, phase.data(), n, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaDeviceSynchronize());  // the DMA from pageable memory has landed
  {
    cuda::ContextConfig config{phase.shape(), {}, Boundary::open, {}};
    config.band_step = settings.band_step;
    cuda::ThicknessContext lt(config);
    const cudaStream_t s = static_cast<cudaStream_t>(lt.stream());
    lt.thickness_async(d_mask, d_map);
    lt.synchronize();
    row.centres = lt.last_centre_count();
    row.lt_bytes_per_voxel = double(used_bytes() - base) / double(n);
    row.lt_ms = time_ms(s, 2, r, [&] { lt.thickness_async(d_mask, d_map); });
    row.copy_ms = time_ms(s, 2, r, [&] { CHECK_CUDA(cudaMemcpyAsync(d_map, d_map + n / 2, n / 2 * sizeof(float), cudaMemcpyDeviceToDevice, s)); });
    row.copy_ms *= 2;  // a copy of N floats: half read, half written above, twice
  }
  CHECK_CUDA(cudaFree(d_map));
  CHECK_CUDA(cudaDeviceSynchronize());

  // PSD-only path and EDT: the context with PSD edges (it owns its distance buffer).
  const size_t base2 = used_bytes();
  int64_t* d_counts = nullptr;
  uint32_t* d_d2 = nullptr;
  {
    cuda::ContextConfig psd_config{phase.shape(), {}, Boundary::open, edges};
    cuda::ThicknessContext psd(psd_config);
    CHECK_CUDA(cudaMalloc(&d_counts, psd.psd_count_entries() * sizeof(int64_t)));
    const cudaStream_t s = static_cast<cudaStream_t>(psd.stream());
    psd.psd_async(d_mask, d_counts);
    psd.synchronize();
    row.psd_bytes_per_voxel = double(used_bytes() - base2 + n) / double(n);  // + the mask
    row.psd_ms = time_ms(s, 2, r, [&] { psd.psd_async(d_mask, d_counts); });
    CHECK_CUDA(cudaMalloc(&d_d2, n * sizeof(uint32_t)));
    row.edt_ms = time_ms(s, 2, r, [&] { psd.squared_distance_async(d_mask, d_d2); });
  }
  CHECK_CUDA(cudaFree(d_d2));
  CHECK_CUDA(cudaFree(d_counts));
  CHECK_CUDA(cudaFree(d_mask));
  CHECK_CUDA(cudaDeviceSynchronize());
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {128, 250, 512, 1000};
  int reps = 20;
  std::string json, volumes, berea = POREFORGE_DATA_DIR "/berea_110.raw";  // --json: the record (none without it)
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--sizes") {
      sizes.clear();
      std::stringstream ss(argv[i + 1]);
      std::string item;
      while (std::getline(ss, item, ',')) sizes.push_back(std::stoll(item));
    } else if (a == "--reps") {
      reps = std::stoi(argv[i + 1]);
    } else if (a == "--json") {
      json = argv[i + 1];
    } else if (a == "--volumes") {
      volumes = argv[i + 1];
    } else if (a == "--berea") {
      berea = argv[i + 1];
    } else if (a == "--band-step") {
      settings.band_step = std::stod(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: bench_engine_cuda [--sizes A,B,...] [--reps R] [--json PATH] [--volumes DIR] [--berea PATH|none] [--band-step RATIO]\n");
      return 2;
    }
  }
  if (!bench::record_path_usable("bench_engine_cuda", json)) return 2;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));

  std::vector<Row> rows;
  auto run = [&](const std::string& name, const std::string& file, const Mask& m) {
    std::fprintf(stderr, "measuring %s %s ...\n", name.c_str(), to_string(m.shape()).c_str());
    if (!volumes.empty()) write_raw(volumes + "/" + file, m);
    rows.push_back(measure(name, m, reps, settings));
  };
  for (int64_t n : sizes) {
    std::fprintf(stderr, "generating blobs %lld^3 ...\n", static_cast<long long>(n));
    run("blobs p=0.4", "blobs_" + std::to_string(n) + ".raw", generate_blobs({n, n, n}, 0.4, 1.0, 1));
  }
  if (berea != "none") run("berea pore", "berea_pore.raw", phase_mask(read_raw(berea, {110, 110, 110}, DType::u8), 0));

  std::printf("\nGPU: %s (%d SMs)\n\n", prop.name, prop.multiProcessorCount);
  std::printf("%-12s %-14s %9s %9s %9s %9s %10s %9s %9s %9s\n", "case", "shape", "centres", "EDT ms", "LT ms",
              "PSD ms", "copy ms", "LT/copy", "LT B/vox", "PSD B/vox");
  for (const Row& r : rows)
    std::printf("%-12s %-14s %9lld %9.3f %9.3f %9.3f %10.3f %8.1fx %9.2f %9.2f\n", r.name.c_str(),
                to_string(r.shape).c_str(), static_cast<long long>(r.centres), r.edt_ms, r.lt_ms, r.psd_ms, r.copy_ms,
                r.lt_ms / r.copy_ms, r.lt_bytes_per_voxel, r.psd_bytes_per_voxel);

  std::ostringstream out;
  out << "{\n  \"benchmark\": \"engine_cuda\",\n  \"version\": \"" << version_string() << "\",\n  \"gpu\": \"" << prop.name
      << "\",\n  \"sms\": " << prop.multiProcessorCount << ",\n  \"timer\": \"CUDA events, median after warm-up\",\n"
      << "  \"copy\": \"device-to-device copy of N float32 (4N bytes read + 4N written)\",\n  \"cases\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << "    {\"name\": \"" << r.name << "\", \"shape\": [" << r.shape.nx << ", " << r.shape.ny << ", " << r.shape.nz
        << "], \"porosity\": " << r.porosity << ", \"centres\": " << r.centres << ", \"edt_ms\": " << r.edt_ms
        << ", \"lt_map_ms\": " << r.lt_ms << ", \"psd_only_ms\": " << r.psd_ms << ", \"copy_ms\": " << r.copy_ms
        << ", \"lt_bytes_per_voxel\": " << r.lt_bytes_per_voxel << ", \"psd_bytes_per_voxel\": " << r.psd_bytes_per_voxel
        << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  return bench::write_record("bench_engine_cuda", json, out.str());
}
