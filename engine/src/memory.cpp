#include "poreforge/memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>

#include "poreforge/error.hpp"
#ifdef POREFORGE_HAVE_CUDA
#include "poreforge/cuda_engine.hpp"
#endif

namespace poreforge {
namespace {

std::string describe_shape(const Shape& s) { return to_string(s); }

// The CUDA thickness context's workspace with the mask (1 byte) and map (4) the dispatcher
// copies to the device; 0 in a build without CUDA.
double cuda_thickness_bytes(const Shape& shape, const Spacing& spacing, Boundary boundary) {
#ifdef POREFORGE_HAVE_CUDA
  cuda::ContextConfig config;
  config.shape = shape;
  config.spacing = spacing;
  config.boundary = boundary;
  return double(cuda::ThicknessContext::workspace_size(config).total()) + 5.0 * double(shape.voxels());
#else
  (void)shape, (void)spacing, (void)boundary;
  return 0;
#endif
}

// A number from a one-line file such as cgroup's memory.max; nullopt-like -1 for "max" or none.
double read_number(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1;
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return -1;
  }
}

std::mutex last_mutex;
MemoryEstimate last_estimate;

}  // namespace

MemoryEstimate thickness_memory(const Shape& shape, std::size_t input_bytes, const Spacing& spacing,
                                Boundary boundary, Backend backend, bool describe) {
  const double n = double(shape.voxels());
  MemoryEstimate e;
  e.what = std::string(describe ? "describe" : "thickness") + " of " + describe_shape(shape);
  double per_voxel = spacing.isotropic() ? memory_per_voxel::thickness_cpu : memory_per_voxel::thickness_cpu_anisotropic;
  if (backend == Backend::cuda) {
    per_voxel = memory_per_voxel::thickness_cuda_host;
    e.device_bytes = cuda_thickness_bytes(shape, spacing, boundary);
  }
  if (describe) per_voxel = std::max(per_voxel + 1, memory_per_voxel::describe_cpu);
  e.host_bytes = n * (double(input_bytes) + per_voxel);
  return e;
}

MemoryEstimate morph_memory(const Shape& shape, std::size_t input_bytes, Backend backend) {
  MemoryEstimate e;
  e.what = "morph of " + describe_shape(shape);
  e.host_bytes = double(shape.voxels()) * (double(input_bytes) + memory_per_voxel::morph_cpu);
  if (backend == Backend::cuda) e.device_bytes = 3.0 * double(shape.voxels());  // input, output, one pass between
  return e;
}

MemoryEstimate generate_memory(const Shape& shape, bool blobs) {
  MemoryEstimate e;
  e.what = std::string("generate ") + (blobs ? "blobs" : "spheres") + " of " + describe_shape(shape);
  e.host_bytes = double(shape.voxels()) * (blobs ? memory_per_voxel::generate_blobs : memory_per_voxel::generate_spheres);
  return e;
}

MemoryEstimate run_memory(const Shape& domain, const Spacing& spacing, Boundary boundary, Backend backend) {
  const double n = double(domain.voxels());
  MemoryEstimate e;
  e.what = "run on a " + describe_shape(domain) + " domain";
  if (backend == Backend::cuda) {
    e.host_bytes = n * memory_per_voxel::run_cuda_host;
    e.device_bytes = cuda_thickness_bytes(domain, spacing, boundary) + n * memory_per_voxel::run_cuda_device;
  } else {
    e.host_bytes = n * memory_per_voxel::run_cpu;
  }
  return e;
}

MemoryEstimate compare_memory(const Shape& shape, const Spacing& spacing, double pore_fraction, bool permeability,
                              Backend backend) {
  const double n = double(shape.voxels());
  MemoryEstimate e;
  e.what = std::string("compare of ") + describe_shape(shape) + " volumes" + (permeability ? " with permeability" : "");
  const double pore = std::clamp(pore_fraction, 0.0, 1.0);
  e.host_bytes = n * memory_per_voxel::compare_measures;
  if (permeability) e.host_bytes += n * memory_per_voxel::permeability_numbering;
  if (backend == Backend::cuda) {
    e.device_bytes = cuda_thickness_bytes(shape, spacing, Boundary::open) +
                     n * pore * (memory_per_voxel::formation_factor_cluster_cuda_device +
                                 (permeability ? memory_per_voxel::permeability_pore : 0));
    e.host_bytes += n * pore * (memory_per_voxel::formation_factor_cluster_cuda_host +
                                (permeability ? memory_per_voxel::permeability_sources_host : 0));
  } else {
    e.host_bytes += n * pore * (memory_per_voxel::formation_factor_cluster_cpu +
                                (permeability ? memory_per_voxel::permeability_pore : 0));
  }
  return e;
}

double host_memory_available(std::string* source) {
  double available = -1;
  std::string from;
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line))
      if (line.rfind("MemAvailable:", 0) == 0) {
        std::istringstream s(line.substr(13));
        double kib = 0;
        if (s >> kib) available = kib * 1024.0, from = "MemAvailable";
        break;
      }
  }
  if (available < 0) {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) available = double(pages) * double(page), from = "available pages";
  }
  // A cgroup (a container, a batch job) may allow less than the machine has.
  double limit = read_number("/sys/fs/cgroup/memory.max");
  double used = read_number("/sys/fs/cgroup/memory.current");
  if (limit < 0) {
    limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  }
  // cgroup v1 writes "no limit" as a number near 2^63.
  if (limit > 0 && limit < 1e18) {
    const double room = std::max(0.0, limit - std::max(0.0, used));
    if (available < 0 || room < available) available = room, from = "cgroup limit";
  }
  if (source) *source = from;
  return available < 0 ? std::numeric_limits<double>::infinity() : available;
}

void require_memory(const MemoryEstimate& estimate) {
  {
    std::lock_guard<std::mutex> lock(last_mutex);
    last_estimate = estimate;
  }
  std::string source;
  const double host = host_memory_available(&source);
  if (estimate.host_bytes > host)
    throw MemoryLimitError(estimate.what + " needs about " + format_bytes(estimate.host_bytes) + " of memory; " +
                           format_bytes(host) + " is available (" + source + ")");
  if (estimate.device_bytes > 0) {
    const double device = double(cuda_memory_available());
    if (estimate.device_bytes > device)
      throw MemoryLimitError(estimate.what + " needs about " + format_bytes(estimate.device_bytes) +
                             " of GPU memory; " + format_bytes(device) + " is free on the device");
  }
}

std::string out_of_memory_message(double bytes) {
  if (bytes > 0) return "out of memory allocating " + format_bytes(bytes);
  std::lock_guard<std::mutex> lock(last_mutex);
  if (last_estimate.what.empty()) return "out of memory";
  std::string source;
  const double host = host_memory_available(&source);
  return "out of memory during " + last_estimate.what + " (estimated " + format_bytes(last_estimate.host_bytes) +
         (last_estimate.device_bytes > 0 ? " on the host, " + format_bytes(last_estimate.device_bytes) + " on the GPU" : "") +
         "; " + format_bytes(host) + " available now)";
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) bytes /= 1000, ++u;
  char text[48];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return text;
}

}  // namespace poreforge
