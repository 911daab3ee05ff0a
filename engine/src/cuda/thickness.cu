// The CUDA backend: ThicknessContext (device-resident, graph-replayed evaluations) and the
// one-shot helpers built on it.
#include <cuda_runtime.h>


#include <algorithm>
#include <cmath>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "../common/ball_containment.hpp"
#include "../common/messages.hpp"
#include "device.hpp"
#include "buffer.cuh"
#include "check.cuh"
#include "coverage_kernels.cuh"
#include "graph_cache.cuh"
#include "poreforge/cuda_engine.hpp"
#include "poreforge/error.hpp"
#include "thickness_kernels.cuh"

namespace poreforge::cuda {
namespace {

using detail::PhysicalMetric;
using detail::VoxelMetric;
using kernels::Geometry;
using detail::max_squared_distance;

int device_shared_limit() {
  int dev = 0, limit = 0;
  PF_CUDA_CHECK(cudaGetDevice(&dev));
  PF_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return limit;
}

}  // namespace

// The thresholds of one use of the class painter (coverage_kernels.cuh) and its counters.
struct ClassSet {
  std::vector<double> edges;
  DeviceBuffer<double> d_edges;
  DeviceBuffer<uint16_t> table;  // class of each integer r2 ≤ table_limit (class_table); empty: none
  int64_t table_limit = -1;
  DeviceBuffer<unsigned int> count, start, cursor;
  DeviceBuffer<unsigned long long> newly;  // PSD: the voxels each class covers first
  // What class q's painter launch hands out: claims[2q] the chunks of the merge pass
  // (paint_band_marking), claims[2q + 1] the painter's tasks when they are claimed (walk_rows).
  DeviceBuffer<unsigned long long> claims;

  ClassSet() = default;
  ClassSet(std::vector<double> e, cudaStream_t stream, const char* what) : edges(std::move(e)) {
    const std::size_t classes = edges.size() + 3;  // 0 … n + 1, and an empty one above (paint_band_marking)
    d_edges = DeviceBuffer<double>(edges.size(), stream, what);
    PF_CUDA_CHECK(cudaMemcpyAsync(d_edges.data(), edges.data(), d_edges.bytes(), cudaMemcpyHostToDevice, stream));
    count = DeviceBuffer<unsigned int>(classes, stream, what);
    start = DeviceBuffer<unsigned int>(classes, stream, what);
    cursor = DeviceBuffer<unsigned int>(classes, stream, what);
    newly = DeviceBuffer<unsigned long long>(classes, stream, what);
    claims = DeviceBuffer<unsigned long long>(2 * classes, stream, what);
  }
  unsigned long long* merge_claims(int q) { return claims.data() + 2 * q; }
  unsigned long long* task_claims(int q) { return claims.data() + 2 * q + 1; }
  int size() const { return int(edges.size()); }
};

// The map's radius bands: 0, then geometric steps from the smallest possible radius to the
// largest one the shape allows. Narrow bands keep few balls of one band over a voxel (each
// visits it: an atomic, or a read with filter_values); each band costs a launch and a pass
// over the marks (paint_band_marking), empty ones above the volume's largest ball included.
// Small volumes are launch-bound, large ones bound by the visits, so the step shrinks as the
// volume grows (docs/performance.md, H200): 80 % up to 2^22 voxels
// (a 160³ cube), 15 % up to 2^25 (322³), 5 % up to 2^28 (645³; 512³ 15.8 → 15.4 ms against
// 3 %), 2 % above (1000³ 170 → 164 ms against 3 %, 201 with 5 %; with the merge in the
// painter's launch, 150.3 against 153.6 with 1.5 % and 157.0 with 3 %).
double default_band_step(int64_t voxels) {
  return voxels <= (int64_t(1) << 22)   ? 1.8
         : voxels <= (int64_t(1) << 25) ? 1.15
         : voxels <= (int64_t(1) << 28) ? 1.05
                                        : 1.02;
}

template <class M>
std::vector<double> band_edges(const M& m, typename M::value_type max_r2, double step) {
  double smallest = 0;
  if constexpr (std::is_same_v<M, detail::VoxelMetric>) smallest = m.spacing;
  else smallest = std::min({m.sx, m.sy, m.sz});
  const double largest = double(m.radius(max_r2));
  std::vector<double> edges{0.0};
  for (double e = smallest; e <= largest; e *= step) edges.push_back(e);
  if (edges.size() < 2) edges.push_back(smallest);
  return edges;
}

// Everything that depends on the metric (the value type of squared distances).
template <class M>
struct Engine {
  using V = typename M::value_type;

  Geometry g{};
  M metric{};
  int64_t voxels = 0, capacity = 0, chunks = 0;

  DeviceBuffer<V> distance;  // PSD path (and the anisotropic map path)
  // Kept ball centres, grouped by class: squared radius, voxel index, row cut, and the number
  // of painter items (walk_rows; scanned in place into item numbers, capacity + 1 entries).
  DeviceBuffer<V> centre_r2;
  DeviceBuffer<uint32_t> centre_index;
  DeviceBuffer<kernels::RowCut> centre_cut;
  DeviceBuffer<unsigned long long> centre_items;
  // Bitmaps: covered voxels (rows padded to whole words, coverage_kernels.cuh's layout) and
  // ball centres (a bit per voxel in index order).
  DeviceBuffer<unsigned int> coverage, centre_bits;
  DeviceBuffer<unsigned int> more_marks;  // the map's second mark bitmap (paint_band_marking)
  DeviceBuffer<unsigned int> total;  // centres found by the last evaluation
  DeviceBuffer<unsigned long long> phase_total;
  DeviceBuffer<kernels::Status> status;
  DeviceBuffer<unsigned long long> tile_sums;  // the row scan's tile totals
  ClassSet bands, psd;  // the map's radius bands; the PSD edges (empty: no PSD path)
  int64_t words_per_row = 0;
  int sm_count = 0;
  int painter_blocks = 0;      // forced (ContextConfig::painter_blocks); 0: by the dealing
  bool early_launch = false;  // programmatic dependent launches (sm_90 and later)
  // The map painted over its own squared distances needs no clearing pass first
  // (detail::map_overwrites_distances): 4 GB not written at 1000³.
  bool paint_over_distances = false;
  // Containment tables on the device.
  DeviceBuffer<V> table_shell, table_reach;
  DeviceBuffer<uint32_t> table_below;
  detail::ContainmentView<M> table{};
  // Launch shapes.
  int line_width[3] = {1, 1, 1};
  std::size_t line_shared[3] = {0, 0, 0};

  Engine(const ContextConfig& c, const M& m, cudaStream_t stream, bool distance_buffer) : metric(m) {
    g = Geometry::of(c.shape, c.boundary);
    voxels = c.shape.voxels();
    if (voxels >= (int64_t(1) << 32)) throw InputError("the CUDA backend indexes voxels with 32 bits: " + to_string(c.shape) + " is too large");
    capacity = std::max<int64_t>(1, std::min<int64_t>(voxels, static_cast<int64_t>(std::ceil(c.centre_capacity * double(voxels)))));
    chunks = (voxels + kernels::kCentreChunk - 1) / kernels::kCentreChunk;
    const V max_r2 = max_squared_distance(c.shape, c.boundary, m);
    const double band_step = c.band_step.value_or(default_band_step(voxels));

    // Launch shapes and the shared memory they need.
    const int shared_limit = device_shared_limit();
    for (int axis = 1; axis < 3; ++axis) {
      const int64_t n = c.shape.extent(axis);
      // Tiles of about 32 KiB, but no narrower than 8 lines (32-byte rows of 4-byte values):
      // seven blocks fit an SM. 64 KiB tiles of 16 lines at 1000³ left three . Long lines shrink the tile to fit 96 KiB.
      int w = 32;
      while (w > 8 && std::size_t(n) * w * sizeof(V) > 32 * 1024) w /= 2;
      while (w > 1 && std::size_t(n) * w * sizeof(V) > 96 * 1024) w /= 2;
      line_width[axis] = w;
      line_shared[axis] = std::size_t(n) * w * sizeof(V);
      if (n > 1 && line_shared[axis] > std::size_t(shared_limit))
        throw InputError("the CUDA backend holds a whole line in shared memory: extent " + std::to_string(n) + " is too long");
    }
    PF_CUDA_CHECK(cudaFuncSetAttribute(kernels::edt_lines<M>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(std::max(line_shared[1], line_shared[2]))));
    // The class passes keep their counters and the edges in shared memory.
    const int most_edges = std::max<int>(int(c.psd_edges.size()), int(band_edges(m, max_r2, band_step).size()));
    const std::size_t class_shared = kernels::class_pass_shared(2 * (most_edges + 2), most_edges);
    cudaFuncAttributes write_pass{};  // its list of the block's centres is static shared memory
    PF_CUDA_CHECK(cudaFuncGetAttributes(&write_pass, kernels::write_classes<M>));
    if (class_shared + write_pass.sharedSizeBytes > std::size_t(shared_limit))
      throw InputError("the CUDA backend holds the PSD edges in shared memory: " + std::to_string(c.psd_edges.size()) +
                       " edges are too many for this device");
    PF_CUDA_CHECK(cudaFuncSetAttribute(kernels::count_classes<M>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(class_shared)));
    PF_CUDA_CHECK(cudaFuncSetAttribute(kernels::write_classes<M>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(class_shared)));
    int dev = 0;
    PF_CUDA_CHECK(cudaGetDevice(&dev));
    PF_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, dev));
    painter_blocks = c.painter_blocks.value_or(0);
    int major = 0;
    PF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    early_launch = major >= 9;
    if constexpr (std::is_same_v<M, VoxelMetric>) paint_over_distances = detail::map_overwrites_distances(m, max_r2);

    // Workspace, once.
    if (distance_buffer) distance = DeviceBuffer<V>(voxels, stream, "squared distances");
    centre_r2 = DeviceBuffer<V>(capacity, stream, "ball centres (radii)");
    centre_index = DeviceBuffer<uint32_t>(capacity, stream, "ball centres (indices)");
    centre_cut = DeviceBuffer<kernels::RowCut>(capacity, stream, "ball centres (row cuts)");
    centre_items = DeviceBuffer<unsigned long long>(capacity + 1, stream, "ball centres (item numbers)");
    words_per_row = (g.nx + 31) / 32;
    coverage = DeviceBuffer<unsigned int>(std::size_t(words_per_row * g.ny * g.nz), stream, "the coverage bitmap");
    // The centre bits are spent once the centres are written: the map's marking painter takes
    // the same buffer for one of its two mark bitmaps, which have the coverage's layout (rows
    // padded to words); more_marks is the other.
    centre_bits = DeviceBuffer<unsigned int>(std::max<std::size_t>(std::size_t((voxels + 31) / 32), coverage.size()),
                                             stream, "the centre bitmap");
    more_marks = DeviceBuffer<unsigned int>(coverage.size(), stream, "the mark bitmap");
    total = DeviceBuffer<unsigned int>(1, stream, "centre count");
    phase_total = DeviceBuffer<unsigned long long>(1, stream, "phase count");
    status = DeviceBuffer<kernels::Status>(1, stream, "status flags");
    // Read by synchronize() after any operation, the distance-only ones included.
    PF_CUDA_CHECK(cudaMemsetAsync(total.data(), 0, total.bytes(), stream));
    PF_CUDA_CHECK(cudaMemsetAsync(status.data(), 0, status.bytes(), stream));
    bands = ClassSet(band_edges(m, max_r2, band_step), stream, "radius bands");
    if (!c.psd_edges.empty()) psd = ClassSet(c.psd_edges, stream, "PSD edges");
    std::vector<uint16_t> host_bands, host_psd;  // live until the copies finish (the sync below)
    class_table(bands, max_r2, host_bands, stream);
    if (!c.psd_edges.empty()) class_table(psd, max_r2, host_psd, stream);
    tile_sums = DeviceBuffer<unsigned long long>(std::size_t(kernels::scan_tile_count(capacity)), stream, "the row scan's tile totals");

    // Containment tables (host-built, exact), copied once.
    const detail::BallContainment<M> host_table(m, max_r2, std::size_t(1) << 20);
    table = host_table.view();
    table_shell = DeviceBuffer<V>(host_table.shells().size(), stream, "containment table");
    table_reach = DeviceBuffer<V>(7 * host_table.reaches().size(), stream, "containment table");
    PF_CUDA_CHECK(cudaMemcpyAsync(table_shell.data(), host_table.shells().data(), table_shell.bytes(), cudaMemcpyHostToDevice, stream));
    PF_CUDA_CHECK(cudaMemcpyAsync(table_reach.data(), host_table.reaches().data(), table_reach.bytes(), cudaMemcpyHostToDevice, stream));
    table.shell = table_shell.data();
    table.reach = table_reach.data();
    if (!host_table.shell_below().empty()) {
      table_below = DeviceBuffer<uint32_t>(host_table.shell_below().size(), stream, "containment table");
      PF_CUDA_CHECK(cudaMemcpyAsync(table_below.data(), host_table.shell_below().data(), table_below.bytes(), cudaMemcpyHostToDevice, stream));
      table.shell_below = table_below.data();
    }
    // The host tables and edges die with this scope: finish the copies first.
    PF_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // The class of every integer squared radius up to max_r2 for `set` (kernels::coverage_class,
  // run on the host), into set.table: the centre passes read one entry instead of searching
  // the edges (kernels::class_of). Integer distances only, and only while the table stays
  // small (2^24 entries, 32 MiB; 1000³ open needs 3·10⁶).
  void class_table(ClassSet& set, V max_r2, std::vector<uint16_t>& host, cudaStream_t stream) {
    if constexpr (std::is_same_v<M, VoxelMetric>) {
      const int n = set.size();
      if (int64_t(max_r2) >= (int64_t(1) << 24) || n + 1 > 65535) return;
      host.resize(std::size_t(max_r2) + 1);
      for (uint32_t r2 = 0; r2 <= max_r2; ++r2)
        host[r2] = uint16_t(kernels::coverage_class(metric, r2, set.edges.data(), n));
      set.table = DeviceBuffer<uint16_t>(host.size(), stream, "class table");
      PF_CUDA_CHECK(cudaMemcpyAsync(set.table.data(), host.data(), set.table.bytes(), cudaMemcpyHostToDevice, stream));
      set.table_limit = int64_t(max_r2);
    }
  }

  // The EDT into `d` (N values), the first step of every operation: it clears the status
  // flags, and its last pass raises no_background when a voxel is left at infinity.
  void distance_transform(const uint8_t* mask, V* d, cudaStream_t stream) const {
    PF_CUDA_CHECK(cudaMemsetAsync(status.data(), 0, status.bytes(), stream));
    const int last_axis = g.nz > 1 ? 2 : g.ny > 1 ? 1 : 0;
    unsigned int* unreachable = &status.data()->no_background;
    const int64_t rows = g.ny * g.nz;
    kernels::edt_rows<M><<<unsigned((rows + 7) / 8), 256, 0, stream>>>(  // a warp per row
        mask, d, g, metric, false, last_axis == 0 ? unreachable : nullptr);
    PF_CUDA_CHECK_LAUNCH(stream);
    for (int axis = 1; axis < 3; ++axis) {
      if (g.extent(axis) == 1) continue;
      const int w = line_width[axis];
      const dim3 block(w, std::max(1, 256 / w));
      const dim3 grid(unsigned((g.nx + w - 1) / w), unsigned(axis == 1 ? g.nz : g.ny));
      kernels::edt_lines<M><<<grid, block, line_shared[axis], stream>>>(d, g, axis, metric,
                                                                        axis == last_axis ? unreachable : nullptr);
      PF_CUDA_CHECK_LAUNCH(stream);
    }
  }

  // Steps 1–3 of coverage_kernels.cuh on the distances `d`: the centres of `set`'s classes,
  // their rows numbered; the coverage bitmap cleared.
  void find_centres(const V* d, ClassSet& set, cudaStream_t stream) {
    const int n = set.size(), classes = n + 2;
    PF_CUDA_CHECK(cudaMemsetAsync(set.count.data(), 0, set.count.bytes(), stream));
    PF_CUDA_CHECK(cudaMemsetAsync(set.newly.data(), 0, set.newly.bytes(), stream));
    PF_CUDA_CHECK(cudaMemsetAsync(set.claims.data(), 0, set.claims.bytes(), stream));
    PF_CUDA_CHECK(cudaMemsetAsync(phase_total.data(), 0, phase_total.bytes(), stream));
    PF_CUDA_CHECK(cudaMemsetAsync(coverage.data(), 0, coverage.bytes(), stream));
    kernels::count_classes<M><<<unsigned(chunks), kernels::kCentreThreads, kernels::class_pass_shared(classes, n), stream>>>(
        d, g, table, metric, voxels, set.d_edges.data(), n, set.table.data(), set.table_limit,
        set.count.data(), centre_bits.data(), phase_total.data());
    PF_CUDA_CHECK_LAUNCH(stream);
    kernels::place_classes<<<1, 1, 0, stream>>>(set.count.data(), n, set.start.data(), set.cursor.data(), total.data(),
                                                capacity, status.data());
    PF_CUDA_CHECK_LAUNCH(stream);
    kernels::write_classes<M><<<unsigned(chunks), kernels::kCentreThreads, kernels::class_pass_shared(2 * classes, n),
                                 stream>>>(d, g, metric, voxels, centre_bits.data(), set.d_edges.data(), n,
                                           set.table.data(), set.table_limit, set.cursor.data(), capacity,
                                           centre_r2.data(), centre_index.data(), centre_cut.data(),
                                           centre_items.data());
    PF_CUDA_CHECK_LAUNCH(stream);
    const unsigned scan_grid = unsigned(std::min<int64_t>(kernels::scan_tile_count(capacity), 8 * sm_count));
    kernels::sum_tiles<<<scan_grid, kernels::kScanThreads, 0, stream>>>(centre_items.data(), total.data(), capacity,
                                                                         tile_sums.data());
    PF_CUDA_CHECK_LAUNCH(stream);
    kernels::scan_tile_sums<<<1, kernels::kScanThreads, 0, stream>>>(tile_sums.data(), total.data(), capacity);
    PF_CUDA_CHECK_LAUNCH(stream);
    kernels::scan_tiles<<<scan_grid, kernels::kScanThreads, 0, stream>>>(centre_items.data(), total.data(), capacity,
                                                                          tile_sums.data());
    PF_CUDA_CHECK_LAUNCH(stream);
  }

  // A step-4 kernel. A painting launch is short (a class above the volume's largest ball is
  // empty), so on sm_90 it is launched with programmatic stream serialisation: its blocks are
  // set up while the previous kernel finishes, and wait for it in
  // kernels::wait_for_previous_kernel before they read anything. Its grid: with `claims`
  // (walk_rows' tasks claimed), the blocks that fit at once — a warp's first task is its own,
  // and a block that started late would hold its first tasks back until the others had
  // claimed everything; dealt, 8 blocks an SM, the late ones balancing the fixed shares
  // (resident blocks only were 2 % slower at 1000³).
  template <class... Params, class... Args>
  void launch_painter(void (*kernel)(Params...), cudaStream_t stream, bool claims, Args&&... args) {
    cudaLaunchAttribute early{};
    early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    int blocks = painter_blocks;
    if (blocks == 0 && claims) {
      int resident = 0;
      PF_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kernels::kPaintThreads, 0));
      blocks = std::max(1, resident) * sm_count;
    } else if (blocks == 0) {
      blocks = 8 * sm_count;
    }
    config.gridDim = dim3(unsigned(blocks));
    config.blockDim = dim3(kernels::kPaintThreads);
    config.stream = stream;
    config.attrs = &early;
    config.numAttrs = early_launch ? 1 : 0;
    PF_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
    PF_CUDA_CHECK_LAUNCH(stream);
  }

  // Step 4 for class q of `set`: its union into the coverage bitmap.
  void paint_union(ClassSet& set, int q, cudaStream_t stream) {
    // The PSD path's warps claim their tasks, the map's take fixed shares: each the faster on
    // an H200 at 1000³ (PSD 108 → 92 ms claimed; the map 142 → 162 ms claimed, why is not
    // understood; docs/performance.md).
    launch_painter(kernels::paint_class<M, true>, stream, true, q, centre_r2.data(), centre_index.data(), centre_cut.data(), centre_items.data(),
                   set.start.data(), set.count.data(), capacity, g, metric, coverage.data(), words_per_row,
                   set.newly.data(), set.task_claims(q));
  }

  // The thickness map of the distances `d` into `thickness`, which may hold `d` itself
  // (isotropic: the centres are found first, then the map is painted over the distances, or
  // cleared and painted where paint_over_distances does not hold).
  void thickness_map(const V* d, float* thickness, cudaStream_t stream) {
    find_centres(d, bands, stream);
    if (!(paint_over_distances && static_cast<const void*>(d) == static_cast<const void*>(thickness)))
      PF_CUDA_CHECK(cudaMemsetAsync(thickness, 0, std::size_t(voxels) * sizeof(float), stream));
    // Band q marks into marks[q % 2] and merges band q + 1's, the other one; both start clear.
    // Each row walked once, its band's union marked as it is painted: 1000³ 277 → 192 ms,
    // 250³ 2.14 → 1.95 against walking it again for the union.
    unsigned int* marks[2] = {centre_bits.data(), more_marks.data()};
    for (unsigned int* m : marks) PF_CUDA_CHECK(cudaMemsetAsync(m, 0, coverage.bytes(), stream));
    for (int q = bands.size() + 1; q >= 1; --q)  // largest band first
      launch_painter(kernels::paint_band_marking<M, false>, stream, false, q, centre_r2.data(), centre_index.data(), centre_cut.data(),
                     centre_items.data(), bands.start.data(), bands.count.data(), capacity, g, metric,
                     coverage.data(), marks[(q + 1) % 2], marks[q % 2], static_cast<int64_t>(coverage.size()),
                     bands.merge_claims(q), words_per_row, thickness, bands.task_claims(q));
  }

  // The PSD-only path on the distances `d`: counts into `counts`.
  void psd_counts(const V* d, int64_t* counts, cudaStream_t stream) {
    find_centres(d, psd, stream);
    for (int q = psd.size() + 1; q >= 1; --q) paint_union(psd, q, stream);  // largest class first
    kernels::counts_from_classes<<<1, 1, 0, stream>>>(psd.newly.data(), psd.size(), phase_total.data(), counts);
    PF_CUDA_CHECK_LAUNCH(stream);
  }
};

struct ThicknessContext::Impl {
  ContextConfig config;
  Stream stream;
  std::variant<std::unique_ptr<Engine<VoxelMetric>>, std::unique_ptr<Engine<PhysicalMetric>>> engine;
  // One captured graph per (operation, input, output).
  GraphCache<std::tuple<int, const void*, const void*>> graphs;
  kernels::Status* host_status = nullptr;  // pinned
  unsigned int* host_total = nullptr;      // pinned
  int64_t last_total = 0;
  bool last_overflowed = false;

  ~Impl() {
    PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream.get()));  // no graph is destroyed mid-run
    if (host_status) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(host_status));
    if (host_total) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(host_total));
  }

  // Runs `record` (which enqueues kernels on the stream) through a graph captured the first
  // time this (op, in, out) is seen.
  template <class F>
  void replay(int op, const void* in, const void* out, F&& record) {
    graphs.launch({op, in, out}, stream.get(), std::forward<F>(record));
  }

  template <class F>
  void with_engine(F&& f) {
    std::visit([&](auto& e) { f(*e); }, engine);
  }
};

WorkspaceSize ThicknessContext::workspace_size(const ContextConfig& config) {
  // Mirrors Engine's allocations without making them (CUB answers its scan's size).
  validate_shape(config.shape);
  validate_spacing(config.spacing);
  WorkspaceSize w;
  const Shape& s = config.shape;
  const int64_t voxels = s.voxels();
  const bool isotropic = config.spacing.isotropic();
  const std::size_t value = isotropic ? sizeof(uint32_t) : sizeof(double);
  const int64_t capacity = std::max<int64_t>(1, std::min<int64_t>(voxels, int64_t(std::ceil(config.centre_capacity * double(voxels)))));
  w.distance = config.psd_edges.empty() && isotropic ? 0 : std::size_t(voxels) * value;
  w.centres = std::size_t(capacity) * (value + sizeof(uint32_t) + sizeof(kernels::RowCut)) +
              std::size_t(capacity + 1) * sizeof(unsigned long long);
  w.scan = std::size_t(kernels::scan_tile_count(capacity)) * sizeof(unsigned long long);
  const std::size_t coverage_words = std::size_t((s.nx + 31) / 32 * s.ny * s.nz);
  // The coverage, Engine::more_marks, and the centre bitmap (the other mark bitmap).
  w.coverage = (2 * coverage_words + std::max<std::size_t>(coverage_words, std::size_t((voxels + 31) / 32))) *
               sizeof(unsigned int);
  // Flags, counters, bands and edges, containment tables (≤ 1 MiB), class tables.
  w.small = (std::size_t(1) << 20) + (config.psd_edges.size() + 3) * 44;  // ClassSet: 3 counters, 3 totals, an edge
  if (isotropic) {  // Engine::class_table: one per class set, while small
    const uint32_t max_r2 = max_squared_distance(s, config.boundary, VoxelMetric{});
    if (int64_t(max_r2) < (int64_t(1) << 24))
      w.small += (config.psd_edges.empty() ? 1 : 2) * (std::size_t(max_r2) + 1) * sizeof(uint16_t);
  }
  return w;
}

ThicknessContext::ThicknessContext(const ContextConfig& config) : m_impl(std::make_unique<Impl>()) {
  validate_shape(config.shape);
  validate_spacing(config.spacing);
  if (!(config.centre_capacity > 0 && config.centre_capacity <= 1))
    throw InputError("centre capacity must lie in (0, 1] (got " + std::to_string(config.centre_capacity) + ")");
  if (!config.psd_edges.empty()) Bins::from_edges(config.psd_edges);  // validates
  if (config.band_step && !(*config.band_step > 1 && *config.band_step <= 4))
    throw InputError("band step must lie in (1, 4] (got " + std::to_string(*config.band_step) + ")");
  if (config.painter_blocks && !(*config.painter_blocks >= 1 && *config.painter_blocks <= (1 << 20)))
    throw InputError("painter blocks must lie in [1, 1048576] (got " + std::to_string(*config.painter_blocks) + ")");
  // Asked before anything is allocated: a context the device cannot hold is refused with both
  // sizes, not found out by a failed allocation part-way.
  const std::size_t need = workspace_size(config).total();
  std::size_t free_bytes = 0, total_bytes = 0;
  PF_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  note_device_started();  // the call above made the context, if nothing had before
  if (need > free_bytes)
    throw MemoryLimitError("a local-thickness context for " + to_string(config.shape) + " needs " +
                       std::to_string(need >> 20) + " MiB of device memory; the device has " +
                       std::to_string(free_bytes >> 20) + " MiB free of " + std::to_string(total_bytes >> 20));
  m_impl->config = config;
  const cudaStream_t s = m_impl->stream.get();
  if (config.spacing.isotropic()) {
    VoxelMetric m;
    m.spacing = config.spacing.x;
    m_impl->engine = std::make_unique<Engine<VoxelMetric>>(config, m, s, !config.psd_edges.empty());
  } else {
    PhysicalMetric m;
    m.sx = config.spacing.x;
    m.sy = config.spacing.y;
    m.sz = config.spacing.z;
    m_impl->engine = std::make_unique<Engine<PhysicalMetric>>(config, m, s, true);
  }
  PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m_impl->host_status), sizeof(kernels::Status)));
  PF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&m_impl->host_total), sizeof(unsigned int)));
  *m_impl->host_status = {};
  *m_impl->host_total = 0;
}

ThicknessContext::~ThicknessContext() = default;

void ThicknessContext::thickness_async(const uint8_t* d_mask, float* d_thickness) {
  m_impl->replay(0, d_mask, d_thickness, [&] {
    m_impl->with_engine([&](auto& e) {
      using V = typename std::decay_t<decltype(e)>::V;
      // Isotropic: the squared distances live in the output buffer until the map replaces
      // them (4 bytes per voxel saved); anisotropic distances are doubles and need their own.
      V* d = std::is_same_v<V, uint32_t> ? reinterpret_cast<V*>(d_thickness) : e.distance.data();
      e.distance_transform(d_mask, d, m_impl->stream.get());
      e.thickness_map(d, d_thickness, m_impl->stream.get());
    });
  });
}

void ThicknessContext::psd_async(const uint8_t* d_mask, int64_t* d_counts) {
  if (m_impl->config.psd_edges.empty()) throw InputError("this context was made without PSD edges");
  m_impl->replay(1, d_mask, d_counts, [&] {
    m_impl->with_engine([&](auto& e) {
      e.distance_transform(d_mask, e.distance.data(), m_impl->stream.get());
      e.psd_counts(e.distance.data(), d_counts, m_impl->stream.get());
    });
  });
}

void ThicknessContext::squared_distance_async(const uint8_t* d_mask, uint32_t* d_out) {
  if (!m_impl->config.spacing.isotropic())
    throw InputError("squared distances in voxel units need isotropic spacing");
  auto& e = *std::get<std::unique_ptr<Engine<VoxelMetric>>>(m_impl->engine);
  m_impl->replay(2, d_mask, d_out, [&] {
    e.distance_transform(d_mask, d_out, m_impl->stream.get());
  });
}

void ThicknessContext::distance_async(const uint8_t* d_mask, float* d_out) {
  m_impl->replay(3, d_mask, d_out, [&] {
    m_impl->with_engine([&](auto& e) {
      using V = typename std::decay_t<decltype(e)>::V;
      using M = std::conditional_t<std::is_same_v<V, uint32_t>, VoxelMetric, PhysicalMetric>;
      V* d = std::is_same_v<V, uint32_t> ? reinterpret_cast<V*>(d_out) : e.distance.data();
      const cudaStream_t stream = m_impl->stream.get();
      e.distance_transform(d_mask, d, stream);
      // In place for 4-byte values: each thread reads its element before writing it.
      kernels::radius_of<M><<<1024, 256, 0, stream>>>(d, d_out, e.voxels, e.metric);
      PF_CUDA_CHECK_LAUNCH(stream);
    });
  });
}

std::size_t ThicknessContext::psd_count_entries() const { return m_impl->config.psd_edges.size() + 2; }

void* ThicknessContext::stream() const { return m_impl->stream.get(); }

int64_t ThicknessContext::last_centre_count() const { return m_impl->last_total; }

bool ThicknessContext::last_overflowed() const { return m_impl->last_overflowed; }

void ThicknessContext::synchronize() {
  const cudaStream_t s = m_impl->stream.get();
  m_impl->with_engine([&](auto& e) {
    PF_CUDA_CHECK(cudaMemcpyAsync(m_impl->host_status, e.status.data(), sizeof(kernels::Status), cudaMemcpyDeviceToHost, s));
    PF_CUDA_CHECK(cudaMemcpyAsync(m_impl->host_total, e.total.data(), sizeof(unsigned int), cudaMemcpyDeviceToHost, s));
  });
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
  m_impl->last_total = *m_impl->host_total;
  const kernels::Status st = *m_impl->host_status;
  *m_impl->host_status = {};
  m_impl->last_overflowed = st.overflow;
  if (st.no_background) throw InputError(detail::no_background_message(m_impl->config.boundary));
  if (st.overflow)
    throw RuntimeError("the volume has " + std::to_string(m_impl->last_total) +
                       " ball centres, more than the context's capacity; make the context with a larger centre_capacity");
}

// ---- workspace and one-shot helpers ------------------------------------------------------

namespace {

template <class T>
void download(const DeviceBuffer<T>& d, T* host, std::size_t count, cudaStream_t s) {
  PF_CUDA_CHECK(cudaMemcpyAsync(host, d.data(), count * sizeof(T), cudaMemcpyDeviceToHost, s));
  PF_CUDA_CHECK(cudaStreamSynchronize(s));
}

void require_phase(const Mask& phase) {
  validate_shape(phase.shape());
  validate_spacing(phase.spacing());
  if (count_phase(phase) == 0) throw InputError(detail::empty_phase_message());
}

// Room for ball centres a context gets for each kind of work: none to speak of for distances
// (they keep no centres), the default for maps and PSDs (a structure with more makes the
// workspace remake its context with room for every voxel).
constexpr double kDistanceCapacity = 0.0001;

}  // namespace

struct Workspace::Impl {
  std::unique_ptr<ThicknessContext> context;
  ContextConfig config;               // the context's
  int device = -1;                    // the device the context was made on
  DeviceBuffer<uint8_t> mask;         // the host functions' copy of the mask
  DeviceBuffer<float> map;            // and their result
  DeviceBuffer<int64_t> counts;       // PSD counts (every path)
  cudaEvent_t caller_done = nullptr;  // where the caller's stream had got to (device-memory calls)

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (caller_done) PF_CUDA_CHECK_NOTHROW(cudaEventDestroy(caller_done));
  }

  cudaStream_t stream() const { return static_cast<cudaStream_t>(context->stream()); }

  // The context's stream waits for what the caller's stream has queued so far (its arrays may
  // still be being written there), not for the rest of the device.
  void after(void* caller, ThicknessContext& c) {
    if (!caller_done) PF_CUDA_CHECK(cudaEventCreateWithFlags(&caller_done, cudaEventDisableTiming));
    PF_CUDA_CHECK(cudaEventRecord(caller_done, static_cast<cudaStream_t>(caller)));
    PF_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(c.stream()), caller_done, 0));
  }

  // A context for `shape`, `spacing`, `boundary` and `edges` (empty: any) with room for
  // `capacity` of the voxels as centres: the one kept when it fits, else a new one.
  ThicknessContext& context_for(const Shape& shape, const Spacing& spacing, Boundary boundary,
                                const std::vector<double>* edges, double capacity) {
    int current = 0;
    PF_CUDA_CHECK(cudaGetDevice(&current));
    if (context && current != device)
      throw InputError("this workspace works on CUDA device " + std::to_string(device) + ", and device " +
                       std::to_string(current) + " is current now: use one workspace per device");
    const bool fits = context && config.shape == shape && config.spacing == spacing && config.boundary == boundary &&
                      (!edges || config.psd_edges == *edges) && config.centre_capacity >= capacity;
    if (!fits) {
      ContextConfig c{shape, spacing, boundary, edges ? *edges : std::vector<double>{}, capacity};
      // Keep the larger room once a structure has needed it (a batch of similar images).
      if (context && config.shape == shape && config.centre_capacity > capacity) c.centre_capacity = config.centre_capacity;
      if (!edges && context && config.shape == shape && config.spacing == spacing && config.boundary == boundary)
        c.psd_edges = config.psd_edges;
      // The buffers are freed on the old context's stream, so they go before it; its
      // workspace goes before the new one is allocated.
      mask = {};
      map = {};
      counts = {};
      context.reset();
      context = std::make_unique<ThicknessContext>(c);
      config = c;
      device = current;
    }
    return *context;
  }

  // Runs `enqueue(context)` and waits; when centres overflow the context's room, once more
  // with room for every voxel.
  template <class Enqueue>
  void run(const Shape& shape, const Spacing& spacing, Boundary boundary, const std::vector<double>* edges,
           double capacity, Enqueue&& enqueue) {
    for (;;) {
      ThicknessContext& c = context_for(shape, spacing, boundary, edges, capacity);
      enqueue(c);
      try {
        c.synchronize();
        return;
      } catch (const RuntimeError&) {
        if (!c.last_overflowed() || config.centre_capacity >= 1.0) throw;
        capacity = 1.0;
      }
    }
  }

  // The host mask on the device, in buffers kept for the next call of the same size.
  const uint8_t* upload_mask(const Mask& phase) {
    if (mask.size() != std::size_t(phase.voxels()))
      mask = DeviceBuffer<uint8_t>(std::size_t(phase.voxels()), stream(), "the mask");
    PF_CUDA_CHECK(cudaMemcpyAsync(mask.data(), phase.data(), mask.bytes(), cudaMemcpyHostToDevice, stream()));
    return mask.data();
  }
  float* map_buffer(int64_t voxels) {
    if (map.size() != std::size_t(voxels)) map = DeviceBuffer<float>(std::size_t(voxels), stream(), "the result");
    return map.data();
  }
  int64_t* counts_buffer() {
    if (counts.size() != context->psd_count_entries())
      counts = DeviceBuffer<int64_t>(context->psd_count_entries(), stream(), "PSD counts");
    return counts.data();
  }
  PsdCounts read_counts(std::size_t edges) {
    std::vector<int64_t> host(counts.size());
    download(counts, host.data(), host.size(), stream());
    PsdCounts c;
    c.at_least.assign(host.begin(), host.begin() + std::ptrdiff_t(edges));
    c.above = host[edges];
    c.phase_voxels = host[edges + 1];
    if (c.phase_voxels == 0) throw InputError(detail::empty_phase_message());
    return c;
  }
};

Workspace::Workspace() : m_impl(std::make_unique<Impl>()) {}

bool Workspace::holds(const Shape& shape, const Spacing& spacing, Boundary boundary) const {
  const Impl& w = *m_impl;
  return w.context && w.config.shape == shape && w.config.spacing == spacing && w.config.boundary == boundary;
}
Workspace::~Workspace() {
  if (m_impl && m_impl->context) PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(m_impl->stream()));
}
Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;

Volume<float> Workspace::distance_transform(const Mask& phase, Boundary boundary) {
  validate_shape(phase.shape());
  validate_spacing(phase.spacing());
  Impl& w = *m_impl;
  Volume<float> out(phase.shape(), phase.spacing());
  w.run(phase.shape(), phase.spacing(), boundary, nullptr, kDistanceCapacity, [&](ThicknessContext& c) {
    c.distance_async(w.upload_mask(phase), w.map_buffer(phase.voxels()));
  });
  download(w.map, out.data(), std::size_t(phase.voxels()), w.stream());
  return out;
}

Volume<float> Workspace::local_thickness(const Mask& phase, Boundary boundary) {
  require_phase(phase);
  Impl& w = *m_impl;
  Volume<float> out(phase.shape(), phase.spacing());
  w.run(phase.shape(), phase.spacing(), boundary, nullptr, ContextConfig{}.centre_capacity, [&](ThicknessContext& c) {
    c.thickness_async(w.upload_mask(phase), w.map_buffer(phase.voxels()));
  });
  download(w.map, out.data(), std::size_t(phase.voxels()), w.stream());
  return out;
}

PsdCounts Workspace::psd_counts(const Mask& phase, Boundary boundary, const Bins& bins) {
  require_phase(phase);
  Impl& w = *m_impl;
  w.run(phase.shape(), phase.spacing(), boundary, &bins.edges(), ContextConfig{}.centre_capacity,
        [&](ThicknessContext& c) { c.psd_async(w.upload_mask(phase), w.counts_buffer()); });
  return w.read_counts(bins.edges().size());
}

void Workspace::distance_transform(const uint8_t* d_mask, float* d_out, const Shape& shape, const Spacing& spacing,
                                   Boundary boundary, void* stream) {
  validate_shape(shape);
  validate_spacing(spacing);
  Impl& w = *m_impl;
  w.run(shape, spacing, boundary, nullptr, kDistanceCapacity, [&](ThicknessContext& c) {
    w.after(stream, c);
    c.distance_async(d_mask, d_out);
  });
}

void Workspace::local_thickness(const uint8_t* d_mask, float* d_out, const Shape& shape, const Spacing& spacing,
                                Boundary boundary, void* stream) {
  validate_shape(shape);
  validate_spacing(spacing);
  Impl& w = *m_impl;
  w.run(shape, spacing, boundary, nullptr, ContextConfig{}.centre_capacity, [&](ThicknessContext& c) {
    w.after(stream, c);
    c.thickness_async(d_mask, d_out);
  });
  // Every phase keeps a centre (its deepest voxel at least): none means no phase.
  if (w.context->last_centre_count() == 0) throw InputError(detail::empty_phase_message());
}

PsdCounts Workspace::psd_counts(const uint8_t* d_mask, const Shape& shape, const Spacing& spacing, Boundary boundary,
                                const Bins& bins, void* stream) {
  validate_shape(shape);
  validate_spacing(spacing);
  Impl& w = *m_impl;
  w.run(shape, spacing, boundary, &bins.edges(), ContextConfig{}.centre_capacity, [&](ThicknessContext& c) {
    w.after(stream, c);
    c.psd_async(d_mask, w.counts_buffer());
  });
  return w.read_counts(bins.edges().size());
}

Volume<uint32_t> squared_distance_voxels(const Mask& phase, Boundary boundary) {
  validate_shape(phase.shape());
  validate_spacing(phase.spacing());
  // Voxel units whatever the image's spacing: the context gets unit spacing.
  ThicknessContext context({phase.shape(), Spacing{}, boundary, {}, kDistanceCapacity});
  const cudaStream_t s = static_cast<cudaStream_t>(context.stream());
  auto d_mask = upload_async(phase.data(), std::size_t(phase.voxels()), s, "the mask");
  DeviceBuffer<uint32_t> d_out(std::size_t(phase.voxels()), s, "squared distances");
  context.squared_distance_async(d_mask.data(), d_out.data());
  context.synchronize();  // throws when a phase voxel had no background
  Volume<uint32_t> out(phase.shape(), phase.spacing());
  download(d_out, out.data(), std::size_t(phase.voxels()), s);
  return out;
}

Volume<float> distance_transform(const Mask& phase, Boundary boundary) {
  return Workspace().distance_transform(phase, boundary);
}

Volume<float> local_thickness(const Mask& phase, Boundary boundary) {
  return Workspace().local_thickness(phase, boundary);
}

PsdCounts psd_counts(const Mask& phase, Boundary boundary, const Bins& bins) {
  return Workspace().psd_counts(phase, boundary, bins);
}

}  // namespace poreforge::cuda
