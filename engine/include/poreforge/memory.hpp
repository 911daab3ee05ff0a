#pragma once
/// Memory a command will take, estimated from the shape it is about to read or make before
/// anything large is allocated, and the memory the machine has: a volume too large for the
/// machine is refused in one line up front, not found out after minutes of swapping or as a
/// bare `std::bad_alloc`.
///
/// Every figure of the estimate lives here. Host figures are peak bytes per voxel of the
/// command on the CPU backend, besides its input image (its element size a voxel), taken from
/// what the code allocates and checked against the peak resident size of the command at 64³
/// to 128³ (`/usr/bin/time -v`, maximum resident set size) with about 20 % to spare. Device
/// figures come from the CUDA engine's own workspace query (cuda_engine.hpp) plus the mask and
/// map the dispatcher copies over.
#include <cstddef>
#include <cstdint>
#include <string>

#include "poreforge/backend.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

/// Host bytes per voxel, beyond the input image, at each command's peak.
namespace memory_per_voxel {
/// thickness on the CPU: mask 1, map 4, squared distances 4 (8 with anisotropic spacing) that
/// the painter reuses, ball centres and painter rows.
inline constexpr double thickness_cpu = 16;
/// thickness with anisotropic spacing (double distances, then a separate 4-byte scratch).
inline constexpr double thickness_cpu_anisotropic = 22;
/// thickness on CUDA: mask and map on the host, the rest on the device.
inline constexpr double thickness_cuda_host = 6;
/// describe: pore and solid masks 2, one thickness map at a time with its walk, then the S2
/// transform (complex double, 16 a voxel) — the larger of the two.
inline constexpr double describe_cpu = 22;
/// morph: input and output masks 2 and the per-line counters of the separable passes.
inline constexpr double morph_cpu = 8;
/// generate blobs: the float field 4, its sorted copy 4, the mask 1.
inline constexpr double generate_blobs = 10;
/// generate spheres: the mask.
inline constexpr double generate_spheres = 2;
/// run on the CPU, per voxel of the domain: structure, its thickness and distance states,
/// the S2 line sums and the start (blobs or a file) being built.
inline constexpr double run_cpu = 40;
/// run on CUDA, host side: the structure, the start and the copies read back for outputs.
inline constexpr double run_cuda_host = 8;
/// run on CUDA, device side besides the thickness context: structure, candidate, map.
inline constexpr double run_cuda_device = 12;
}  // namespace memory_per_voxel

/// What a command is about to need, in bytes.
struct MemoryEstimate {
  std::string what;         ///< "thickness of 1400x1400x1400 (u8)", for messages
  double host_bytes = 0;
  double device_bytes = 0;  ///< 0 unless the command runs on the CUDA backend
};

/// `thickness` (and `describe` with `describe` true) of an image of `shape` whose elements take
/// `input_bytes` each, on `backend` (cpu or cuda, already resolved).
MemoryEstimate thickness_memory(const Shape& shape, std::size_t input_bytes, const Spacing& spacing,
                                Boundary boundary, Backend backend, bool describe = false);
/// `morph` of an image of `shape` with `input_bytes` per element.
MemoryEstimate morph_memory(const Shape& shape, std::size_t input_bytes, Backend backend);
/// `generate` of `shape` (blobs or spheres).
MemoryEstimate generate_memory(const Shape& shape, bool blobs);
/// `run` on a domain of `domain` voxels; the target image (if any) is measured first, so its
/// own `describe` estimate counts when it is the larger.
MemoryEstimate run_memory(const Shape& domain, const Spacing& spacing, Boundary boundary, Backend backend);

/// Bytes of host memory this process may still take: the smaller of the kernel's
/// MemAvailable (/proc/meminfo; sysconf's available pages where there is none) and the
/// room left under a cgroup limit (v2 memory.max − memory.current, or v1's). `source`
/// receives where the figure came from ("MemAvailable", "cgroup limit").
double host_memory_available(std::string* source = nullptr);

/// Throws InputError naming the estimate and what is available when the host (or, when the
/// estimate has device bytes, the current CUDA device) has less. Remembers the estimate for
/// out_of_memory_message().
void require_memory(const MemoryEstimate& estimate);

/// "out of memory (…)" naming `bytes` (when non-zero) or else the last estimate checked.
std::string out_of_memory_message(double bytes = 0);

/// "21.3 GB", "512 kB": decimal units, three significant digits.
std::string format_bytes(double bytes);

}  // namespace poreforge
