#pragma once
/// Memory a command will take, estimated from the shape it is about to read or make before
/// anything large is allocated, and the memory the machine has: a volume too large for the
/// machine is refused in one line up front, not found out after minutes of swapping or as a
/// bare `std::bad_alloc`.
///
/// Every figure of the estimate lives here. Host figures are peak bytes per voxel of the
/// command on the CPU backend, besides its input image (its element size a voxel), from what
/// the code allocates, measured as the growth of the maximum resident set size
/// (`/usr/bin/time -v`) between 96³ and 160³ (run: 96³ and 128³ domains), with 20–40 % to
/// spare. Re-measure when a command's allocations change. Device
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
/// thickness on the CPU: mask 1, map 4, squared distances 4 that the painter reuses, ball
/// centres and painter rows (measured 11.4).
inline constexpr double thickness_cpu = 16;
/// thickness with anisotropic spacing: double distances, then a separate 4-byte scratch
/// (measured 15.8).
inline constexpr double thickness_cpu_anisotropic = 22;
/// thickness on CUDA: mask and map on the host, the rest on the device.
inline constexpr double thickness_cuda_host = 6;
/// describe: pore and solid masks 2, a thickness map and its walk, the S2 transform (complex
/// double, 16 a voxel) and its directional sums (measured 29.9).
inline constexpr double describe_cpu = 36;
/// morph: input and output masks 2, the ball's distance pass and per-line counters (an
/// opening by ball:3 measured 13).
inline constexpr double morph_cpu = 16;
/// generate blobs: the float field 4, its sorted copy 4, the mask 1 (measured 9.1).
inline constexpr double generate_blobs = 10;
/// generate spheres: the mask (measured 1.0).
inline constexpr double generate_spheres = 2;
/// run on the CPU, per voxel of the domain: structure, its thickness and distance states,
/// the S2 line sums and the start being built (a blobs start at 96³ to 128³ measured 60).
inline constexpr double run_cpu = 72;
/// run on the CPU, each replica of a speculative batch (annealing.batch): structure 1, voxel
/// lists 8 and slots 8, the pore and solid evaluators' masks and evaluated masks 4 and kept maps
/// 8, and a full evaluation's working memory while it starts (thickness_cpu).
inline constexpr double run_cpu_replica = 29 + thickness_cpu;
/// run on CUDA, host side: the structure, the start and the copies read back for outputs.
inline constexpr double run_cuda_host = 8;
/// run on CUDA, device side besides the thickness context: structure, candidate, map.
inline constexpr double run_cuda_device = 12;
/// compare, per voxel of one volume measured: the structure measures and local thickness
/// (describe's), and the formation factor's box-sized arrays.
inline constexpr double compare_measures = 42;
/// compare, per voxel of the formation factor's spanning cluster on the CPU: operator,
/// multigrid hierarchy and CG vectors (a 200³ crop of Berea measured 204).
inline constexpr double formation_factor_cluster_cpu = 210;
/// compare on CUDA, device side per voxel of the formation factor's spanning cluster: its
/// system (6 neighbours, 6 conductances, diagonal, right-hand side), the CG vectors and the
/// multigrid hierarchy (maps, work vectors, coarse levels about a quarter of the finest).
inline constexpr double formation_factor_cluster_cuda_device = 180;
/// compare on CUDA, host side per voxel of the spanning cluster: the system and the multigrid
/// hierarchy built there.
inline constexpr double formation_factor_cluster_cuda_host = 170;
/// compare with permeability, per pore voxel: the lattice's fluid nodes (the sample alone:
/// its mirror image is not stored), each with two sets of 19 double populations (float ones
/// first, freed as the double ones come) and 18 int32 sources; on the device with CUDA.
inline constexpr double permeability_pore = 376;
/// compare with permeability, host side per voxel: the lattice's node numbering while the
/// sources are found.
inline constexpr double permeability_numbering = 4;
/// compare with permeability on CUDA, host side per pore voxel: the sources' host copy, kept
/// while the device runs.
inline constexpr double permeability_sources_host = 72;
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

/// `compare`, once its images are read and cut: one volume of `shape` measured at a time —
/// the structure measures, the formation factor over at most `pore_fraction` of the voxels
/// (the largest of any volume's) and, with `permeability`, the lattice Boltzmann populations.
MemoryEstimate compare_memory(const Shape& shape, const Spacing& spacing, double pore_fraction, bool permeability,
                              Backend backend);

/// Bytes of host memory this process may still take: the smaller of the kernel's
/// MemAvailable (/proc/meminfo; sysconf's available pages where there is none) and the
/// room left under a cgroup limit (v2 memory.max − memory.current, or v1's). `source`
/// receives where the figure came from ("MemAvailable", "cgroup limit").
double host_memory_available(std::string* source = nullptr);

/// Throws MemoryLimitError (an InputError) naming the estimate and what is available when the host (or, when the
/// estimate has device bytes, the current CUDA device) has less. Remembers the estimate for
/// out_of_memory_message().
void require_memory(const MemoryEstimate& estimate);

/// "out of memory (…)" naming `bytes` (when non-zero) or else the last estimate checked.
std::string out_of_memory_message(double bytes = 0);

/// "21.3 GB", "512 kB": decimal units, three significant digits.
std::string format_bytes(double bytes);

}  // namespace poreforge
