// The CUDA morphology: FramePipeline (graph-replayed pipelines on batches of frames, streamed
// from host memory through pinned buffers) and the one-shot helper.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "../common/metric.hpp"
#include "buffer.cuh"
#include "check.cuh"
#include "graph_cache.cuh"
#include "edt_kernels.cuh"
#include "morphology_kernels.cuh"
#include "poreforge/cuda_morphology.hpp"
#include "poreforge/error.hpp"

namespace poreforge::cuda {
namespace {

using detail::PhysicalMetric;
using detail::VoxelMetric;

constexpr int kThreads = 256;

// A window of k voxels with its anchor, clipped to a line of n voxels: a window reaching more
// than n past either end sees nothing more there, so both reaches shrink to n at most (this
// bounds the shared memory of the x pass and the work of a y/z pass for huge boxes).
struct Window {
  int k = 1, anchor = 0;
  static Window clipped(int k, int64_t n) {
    int64_t left = k / 2, right = k - 1 - k / 2;
    left = std::min<int64_t>(left, n);
    right = std::min<int64_t>(right, n);
    return {int(left + right + 1), int(left)};
  }
};

unsigned grid_for(int64_t threads) {
  return unsigned(std::clamp<int64_t>((threads + kThreads - 1) / kThreads, 1, 65535 * 16));
}

int shared_limit() {
  int dev = 0, limit = 0;
  PF_CUDA_CHECK(cudaGetDevice(&dev));
  PF_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return limit;
}

bool unit_spacing(const Spacing& s) { return s.x == 1.0 && s.y == 1.0 && s.z == 1.0; }

// The phases a step runs: erosions and dilations, in order.
std::vector<bool> phases_of(const MorphStep& step) {
  std::vector<bool> erosion;
  auto repeat = [&](bool e) { erosion.insert(erosion.end(), std::size_t(step.iterations), e); };
  switch (step.op) {
    case MorphOp::erode: repeat(true); break;
    case MorphOp::dilate: repeat(false); break;
    case MorphOp::open: repeat(true), repeat(false); break;
    case MorphOp::close: repeat(false), repeat(true); break;
  }
  return erosion;
}

bool has_ball(const PipelineConfig& c) {
  return std::any_of(c.steps.begin(), c.steps.end(),
                     [](const MorphStep& s) { return s.element.kind == StructuringElement::Kind::ball; });
}

std::size_t distance_value_bytes(const PipelineConfig& c) {
  return unit_spacing(c.spacing) ? sizeof(uint32_t) : sizeof(double);
}

struct Layout {
  int64_t nx = 0, ny = 0, nz = 0;  // of one batch: nz = frame nz (volume) or frames (images)
  int64_t wpr = 0, rows = 0;
  uint32_t tail = 0;
  bool volume = false;  // frames are 3D: z is a real axis
  int64_t voxels() const { return nx * ny * nz; }
  int64_t words() const { return rows * wpr; }

  static Layout of(const Shape& frame, int frames) {
    Layout l;
    l.nx = frame.nx;
    l.ny = frame.ny;
    l.volume = frame.nz > 1;
    l.nz = l.volume ? frame.nz : frames;
    l.wpr = (l.nx + 31) / 32;
    l.rows = l.ny * l.nz;
    const int used = int(l.nx - 32 * (l.wpr - 1));
    l.tail = used == 32 ? 0xFFFFFFFFu : ((1u << used) - 1u);
    return l;
  }
};

void validate(const PipelineConfig& c) {
  validate_shape(c.frame);
  validate_spacing(c.spacing);
  if (c.steps.empty()) throw InputError("a morphology pipeline needs at least one step");
  if (c.batch < 1) throw InputError("frames per batch must be at least 1 (got " + std::to_string(c.batch) + ")");
  if (c.batch > 1 && c.frame.nz > 1)
    throw InputError("batches of more than one frame are for 2D frames; " + to_string(c.frame) + " is a volume");
  if (c.slots < 1 || c.slots > 16) throw InputError("slots must lie in 1…16 (got " + std::to_string(c.slots) + ")");
  for (const MorphStep& s : c.steps) validate_element(s.element, s.iterations);
  const Layout l = Layout::of(c.frame, c.batch);
  if (has_ball(c) && (l.ny > 65535 || l.nz > 65535))
    throw InputError("the CUDA ball morphology launches a block row per y or z line: " + to_string(c.frame) +
                     " × " + std::to_string(c.batch) + " has more than 65535 of them");
  if (has_ball(c) && l.voxels() >= (int64_t(1) << 32))
    throw InputError("the CUDA ball morphology indexes voxels with 32 bits: a batch of " + to_string(c.frame) +
                     " × " + std::to_string(c.batch) + " is too large");
}

}  // namespace

// ---- PinnedBuffer --------------------------------------------------------------------------

PinnedBuffer::PinnedBuffer(std::size_t bytes) : m_bytes(bytes) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMallocHost(reinterpret_cast<void**>(&m_data), bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw RuntimeError("out of page-locked host memory: allocating " + std::to_string(bytes) + " bytes failed: " +
                       cudaGetErrorString(err));
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (m_data) PF_CUDA_CHECK_NOTHROW(cudaFreeHost(m_data));
}

// ---- FramePipeline -----------------------------------------------------------------------

struct FramePipeline::Impl {
  // One batch in flight: its stream, device buffers, staging buffers and captured graphs.
  struct Slot {
    Stream stream;
    DeviceBuffer<uint8_t> in, out;          // frames of process(); the output also holds the bytes state
    DeviceBuffer<uint32_t> bits[2];
    DeviceBuffer<unsigned char> distance;   // ball steps: uint32 or double per voxel
    std::unique_ptr<PinnedBuffer> stage_in, stage_out;  // pageable callers only, made on first need
    Event done{cudaEventDisableTiming};
    int64_t pending_offset = -1, pending_frames = 0;    // a staged result not yet copied out
    GraphCache<std::tuple<const void*, const void*, int>> graphs;

    ~Slot() { PF_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(stream.get())); }
  };

  PipelineConfig config;
  std::size_t frame_bytes = 0;
  std::vector<std::unique_ptr<Slot>> slots;
  int shared_max = 0;

  explicit Impl(const PipelineConfig& c) : config(c) {
    validate(c);
    frame_bytes = std::size_t(c.frame.voxels());
    shared_max = shared_limit();
    const Layout l = Layout::of(c.frame, c.batch);
    // The x pass holds a row (and its left padding) twice in shared memory.
    for (const MorphStep& s : c.steps)
      if (s.element.kind == StructuringElement::Kind::box) {
        const Window wx = Window::clipped(s.element.kx, l.nx);
        if (row_shared_bytes(l, wx) > std::size_t(shared_max))
          throw InputError("the CUDA morphology holds a row in shared memory: rows of " + std::to_string(l.nx) +
                           " voxels are too long for a box of width " + std::to_string(s.element.kx));
      }
    PF_CUDA_CHECK(cudaFuncSetAttribute(kernels::dilate_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_max));
    PF_CUDA_CHECK(cudaFuncSetAttribute(kernels::edt_lines_capped<VoxelMetric>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_max));
    PF_CUDA_CHECK(cudaFuncSetAttribute(kernels::edt_lines_capped<PhysicalMetric>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_max));
    const std::size_t batch_bytes = frame_bytes * std::size_t(c.batch);
    for (int i = 0; i < c.slots; ++i) {
      auto slot = std::make_unique<Slot>();
      const cudaStream_t s = slot->stream.get();
      slot->in = DeviceBuffer<uint8_t>(batch_bytes, s, "input frames");
      slot->out = DeviceBuffer<uint8_t>(batch_bytes, s, "output frames");
      for (auto& b : slot->bits) b = DeviceBuffer<uint32_t>(std::size_t(l.words()), s, "bit-packed frames");
      if (has_ball(c))  // two buffers: the line passes run out of place
        slot->distance = DeviceBuffer<unsigned char>(2 * std::size_t(l.voxels()) * distance_value_bytes(c), s, "squared distances");
      slots.push_back(std::move(slot));
    }
    for (auto& slot : slots) PF_CUDA_CHECK(cudaStreamSynchronize(slot->stream.get()));
  }

  static std::size_t row_shared_bytes(const Layout& l, const Window& w) {
    return 2 * std::size_t(row_pad(w) + l.wpr) * sizeof(uint32_t);
  }
  static int64_t row_pad(const Window& w) { return (w.anchor + 31) / 32 + 1; }

  // One dilation pass along `axis` on bits (erosion: invert the first input / last output).
  void box_pass(const Layout& l, int axis, Window w, const uint32_t* in, uint32_t* out, bool invert_in,
                bool invert_out, cudaStream_t stream) const {
    if (axis == 0) {
      const int64_t pad = row_pad(w);
      const unsigned blocks = unsigned(std::min<int64_t>(l.rows, 65535 * 8));
      kernels::dilate_rows<<<blocks, 128, row_shared_bytes(l, w), stream>>>(in, out, l.rows, l.wpr, l.tail, w.k,
                                                                             w.anchor, pad, invert_in, invert_out);
    } else {
      const int64_t n = axis == 1 ? l.ny : l.nz;
      const int64_t columns = axis == 1 ? l.wpr * l.nz : l.wpr * l.ny;
      const int64_t stride = axis == 1 ? l.wpr : l.wpr * l.ny;
      const int64_t threads = columns * ((n + w.k - 1) / w.k);
      kernels::dilate_lines<<<grid_for(threads), kThreads, 0, stream>>>(in, out, l.wpr, l.ny, columns, n, stride, axis,
                                                                        l.tail, w.k, w.anchor, invert_in, invert_out);
    }
    PF_CUDA_CHECK_LAUNCH(stream);
  }

  // One box erosion or dilation: x, y, z passes (those with k > 1). Returns the buffer index
  // holding the result.
  int box_once(const Layout& l, const StructuringElement& e, bool erosion, Slot& slot, int current,
               cudaStream_t stream) const {
    struct Pass {
      int axis;
      Window w;
    };
    std::vector<Pass> passes;
    const int k[3] = {e.kx, e.ky, e.kz};
    const int64_t extent[3] = {l.nx, l.ny, l.volume ? l.nz : 1};
    for (int axis = 0; axis < 3; ++axis)
      if (k[axis] > 1 && extent[axis] > 1) passes.push_back({axis, Window::clipped(k[axis], extent[axis])});
    for (std::size_t i = 0; i < passes.size(); ++i) {
      box_pass(l, passes[i].axis, passes[i].w, slot.bits[current].data(), slot.bits[1 - current].data(),
               erosion && i == 0, erosion && i + 1 == passes.size(), stream);
      current = 1 - current;
    }
    return current;
  }

  // Grid for the row-walking pack/unpack kernels: x over a row's words, y over rows.
  static dim3 row_grid(const Layout& l) {
    return dim3(unsigned((l.wpr + 127) / 128), unsigned(std::min<int64_t>(l.rows, 65535)));
  }
  // Whether every row of `bytes` starts on a 16-byte boundary (16-byte moves in pack/unpack).
  static bool rows_aligned(const Layout& l, const void* bytes) {
    return l.nx % 16 == 0 && reinterpret_cast<std::uintptr_t>(bytes) % 16 == 0;
  }

  // One ball erosion or dilation of the bytes `image` into the bytes `out` (may be `image`):
  // a distance transform whose line passes stop at r (x pass into one buffer, y and z passes
  // from buffer to buffer, out of place), then a threshold.
  template <class M>
  void ball_once(const Layout& l, double radius, bool erosion, const M& metric, Slot& slot, const uint8_t* image,
                 uint8_t* out, cudaStream_t stream) const {
    using V = typename M::value_type;
    V* d[2] = {reinterpret_cast<V*>(slot.distance.data()),
               reinterpret_cast<V*>(slot.distance.data()) + l.voxels()};
    const double r2 = radius * radius;
    V cap = M::infinity;  // the smallest value known to exceed r²
    if constexpr (std::is_same_v<V, uint32_t>) {
      if (r2 < double(std::numeric_limits<uint32_t>::max() - 1)) cap = V(std::floor(r2)) + 1;
    } else {
      cap = std::nextafter(r2, std::numeric_limits<double>::infinity());
    }
    const kernels::Geometry g = kernels::Geometry::of({l.nx, l.ny, l.nz}, Boundary::open);
    // Distances from each voxel to the nearest voxel of the other kind: to the complement
    // (erosion) or to the set (dilation, so the set is the background).
    kernels::edt_rows<M><<<unsigned((l.rows + 7) / 8), 256, 0, stream>>>(image, d[0], g, metric, !erosion);
    PF_CUDA_CHECK_LAUNCH(stream);
    int current = 0;
    for (int axis = 1; axis < (l.volume ? 3 : 2); ++axis) {
      const int64_t n = axis == 1 ? l.ny : l.nz;
      if (n == 1) continue;
      int reach = 0;  // offsets whose own term is below the cap
      while (reach < n && metric.term(reach + 1, axis) < cap) ++reach;
      constexpr int segment = 64;
      int w = 32;
      auto shared = [&](int width) { return std::size_t(segment + 2 * reach) * width * sizeof(V); };
      while (w > 1 && shared(w) > std::size_t(shared_max)) w /= 2;
      if (shared(w) > std::size_t(shared_max))
        throw InputError("the CUDA ball morphology: a ball of radius " + std::to_string(radius) + " is too large");
      const dim3 block(w, std::max(1, 256 / w));
      const dim3 grid(unsigned((l.nx + w - 1) / w), unsigned(axis == 1 ? l.nz : l.ny), unsigned((n + segment - 1) / segment));
      kernels::edt_lines_capped<M><<<grid, block, shared(w), stream>>>(d[current], d[1 - current], g, axis, metric, cap,
                                                                       reach, segment);
      PF_CUDA_CHECK_LAUNCH(stream);
      current = 1 - current;
    }
    kernels::threshold_ball<V><<<grid_for(l.voxels()), kThreads, 0, stream>>>(image, d[current], out, l.voxels(), r2, erosion);
    PF_CUDA_CHECK_LAUNCH(stream);
  }

  // Enqueues the whole pipeline for `frames` frames from `d_in` to `d_out`. The state moves
  // between two forms as the steps need: bit-packed (boxes) and bytes (balls, kept in d_out).
  void record(Slot& slot, const uint8_t* d_in, uint8_t* d_out, int frames) const {
    const cudaStream_t stream = slot.stream.get();
    const Layout l = Layout::of(config.frame, frames);
    const uint8_t* bytes = d_in;  // the state as bytes, or null when it is in slot.bits[current]
    int current = 0;
    for (const MorphStep& step : config.steps)
      for (bool erosion : phases_of(step)) {
        const auto& e = step.element;
        if (e.kind == StructuringElement::Kind::box) {
          if (bytes) {
            kernels::pack_bits<<<row_grid(l), 128, 0, stream>>>(bytes, slot.bits[current].data(), l.nx, l.rows, l.wpr,
                                                                 rows_aligned(l, bytes));
            PF_CUDA_CHECK_LAUNCH(stream);
            bytes = nullptr;
          }
          current = box_once(l, e, erosion, slot, current, stream);
          continue;
        }
        if (!bytes) {
          kernels::unpack_bits<<<row_grid(l), 128, 0, stream>>>(slot.bits[current].data(), d_out, l.nx, l.rows, l.wpr,
                                                            rows_aligned(l, d_out));
          PF_CUDA_CHECK_LAUNCH(stream);
          bytes = d_out;
        }
        if (unit_spacing(config.spacing)) {
          ball_once(l, e.radius, erosion, VoxelMetric{}, slot, bytes, d_out, stream);
        } else {
          const PhysicalMetric m{config.spacing.x, config.spacing.y, config.spacing.z};
          ball_once(l, e.radius, erosion, m, slot, bytes, d_out, stream);
        }
        bytes = d_out;
      }
    if (!bytes) {
      kernels::unpack_bits<<<row_grid(l), 128, 0, stream>>>(slot.bits[current].data(), d_out, l.nx, l.rows, l.wpr,
                                                            rows_aligned(l, d_out));
      PF_CUDA_CHECK_LAUNCH(stream);
    } else if (bytes != d_out) {  // no step changed the form (boxes of size 1 only): a copy
      PF_CUDA_CHECK(cudaMemcpyAsync(d_out, bytes, std::size_t(l.voxels()), cudaMemcpyDeviceToDevice, stream));
    }
  }

  // Runs the pipeline through the graph captured for (d_in, d_out, frames) on this slot.
  void launch(Slot& slot, const uint8_t* d_in, uint8_t* d_out, int frames) {
    if (frames < 1 || frames > config.batch)
      throw InputError("a batch holds 1…" + std::to_string(config.batch) + " frames (got " + std::to_string(frames) + ")");
    slot.graphs.launch({d_in, d_out, frames}, slot.stream.get(), [&] { record(slot, d_in, d_out, frames); });
  }
};

namespace {

bool is_pinned(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// Host-to-host copy on every OpenMP thread: one thread cannot feed the copy engines.
void parallel_copy(uint8_t* to, const uint8_t* from, std::size_t bytes) {
  constexpr std::size_t chunk = std::size_t(1) << 20;
  const int64_t chunks = int64_t((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) {
    const std::size_t begin = std::size_t(c) * chunk;
    std::memcpy(to + begin, from + begin, std::min(chunk, bytes - begin));
  }
}

}  // namespace

std::size_t pipeline_workspace_bytes(const PipelineConfig& config) {
  validate(config);
  const Layout l = Layout::of(config.frame, config.batch);
  std::size_t per_slot = 2 * std::size_t(l.voxels()) + 2 * std::size_t(l.words()) * sizeof(uint32_t);
  if (has_ball(config)) per_slot += 2 * std::size_t(l.voxels()) * distance_value_bytes(config);
  return per_slot * std::size_t(config.slots);
}

FramePipeline::FramePipeline(const PipelineConfig& config) : m_impl(std::make_unique<Impl>(config)) {}
FramePipeline::~FramePipeline() = default;

const PipelineConfig& FramePipeline::config() const { return m_impl->config; }
std::size_t FramePipeline::frame_bytes() const { return m_impl->frame_bytes; }
void* FramePipeline::stream() const { return m_impl->slots.front()->stream.get(); }

void FramePipeline::apply_async(const uint8_t* d_in, uint8_t* d_out, int frames) {
  m_impl->launch(*m_impl->slots.front(), d_in, d_out, frames);
}

void FramePipeline::synchronize() {
  for (auto& slot : m_impl->slots) PF_CUDA_CHECK(cudaStreamSynchronize(slot->stream.get()));
}

StreamStats FramePipeline::process(const uint8_t* in, uint8_t* out, int64_t frames) {
  Impl& p = *m_impl;
  StreamStats stats;
  stats.frames = frames;
  if (frames <= 0) return stats;
  const bool direct_in = is_pinned(in), direct_out = is_pinned(out);
  const std::size_t fb = p.frame_bytes, batch_bytes = fb * std::size_t(p.config.batch);
  for (auto& slot : p.slots) {
    if (!direct_in && !slot->stage_in) slot->stage_in = std::make_unique<PinnedBuffer>(batch_bytes);
    if (!direct_out && !slot->stage_out) slot->stage_out = std::make_unique<PinnedBuffer>(batch_bytes);
  }
  // Timing: every slot stream starts after `start`; the run ends at the latest `stop`.
  const Event start;
  std::vector<std::unique_ptr<Event>> stops;
  for (std::size_t i = 0; i < p.slots.size(); ++i) stops.push_back(std::make_unique<Event>());
  PF_CUDA_CHECK(cudaEventRecord(start.get(), p.slots.front()->stream.get()));
  for (auto& slot : p.slots) PF_CUDA_CHECK(cudaStreamWaitEvent(slot->stream.get(), start.get(), 0));

  auto collect = [&](Impl::Slot& slot) {  // a staged result of this slot, once its copy is done
    PF_CUDA_CHECK(cudaEventSynchronize(slot.done.get()));
    if (slot.pending_offset >= 0) {
      parallel_copy(out + slot.pending_offset, slot.stage_out->data(), std::size_t(slot.pending_frames) * fb);
      slot.pending_offset = -1;
    }
  };
  const int64_t batches = (frames + p.config.batch - 1) / p.config.batch;
  for (int64_t b = 0; b < batches; ++b) {
    Impl::Slot& slot = *p.slots[std::size_t(b % int64_t(p.slots.size()))];
    const cudaStream_t s = slot.stream.get();
    const int64_t first = b * p.config.batch;
    const int n = int(std::min<int64_t>(p.config.batch, frames - first));
    const std::size_t offset = std::size_t(first) * fb, bytes = std::size_t(n) * fb;
    collect(slot);  // the slot's previous batch has left its buffers
    const uint8_t* source = in + offset;
    if (!direct_in) {
      parallel_copy(slot.stage_in->data(), source, bytes);
      source = slot.stage_in->data();
    }
    PF_CUDA_CHECK(cudaMemcpyAsync(slot.in.data(), source, bytes, cudaMemcpyHostToDevice, s));
    p.launch(slot, slot.in.data(), slot.out.data(), n);
    uint8_t* target = direct_out ? out + offset : slot.stage_out->data();
    PF_CUDA_CHECK(cudaMemcpyAsync(target, slot.out.data(), bytes, cudaMemcpyDeviceToHost, s));
    PF_CUDA_CHECK(cudaEventRecord(slot.done.get(), s));
    if (!direct_out) {
      slot.pending_offset = int64_t(offset);
      slot.pending_frames = n;
    }
  }
  float longest = 0;
  for (std::size_t i = 0; i < p.slots.size(); ++i) {
    PF_CUDA_CHECK(cudaEventRecord(stops[i]->get(), p.slots[i]->stream.get()));
    collect(*p.slots[i]);
    PF_CUDA_CHECK(cudaEventSynchronize(stops[i]->get()));
    float ms = 0;
    PF_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stops[i]->get()));
    longest = std::max(longest, ms);
  }
  stats.milliseconds = longest;
  return stats;
}

Mask morphology(const Mask& image, MorphOp op, const StructuringElement& element, int iterations) {
  PipelineConfig config;
  config.frame = image.shape();
  config.spacing = image.spacing();
  config.steps = {{op, element, iterations}};
  config.slots = 1;
  FramePipeline pipeline(config);
  Mask out(image.shape(), image.spacing());
  pipeline.process(image.data(), out.data(), 1);
  return out;
}

}  // namespace poreforge::cuda
