#pragma once
/// The CUDA morphology: a pipeline of binary erosions/dilations run on batches of frames that
/// stay on the device (apply_async) or stream from and back to host memory (process), with the
/// same results as the CPU functions of morphology.hpp. Compiles without nvcc (a stream is a
/// void*); defined only in builds with the CUDA backend.
///
/// How it runs:
///  - Boxes work on bit-packed frames (32 voxels per word along x): a pass along x ORs two
///    shifted copies of a row after ⌊log2 k⌋ doubling steps in shared memory; a pass along y or
///    z is van Herk / Gil–Werman on whole words (a thread per block of k lines: suffix ORs
///    backwards, prefix ORs of the next block forwards, one OR per output), so the cost does
///    not grow with k along y and z and grows as log k along x. Erosion is the complement of
///    the dilation of the complement, which is exactly "outside never erodes".
///  - Balls use one exact distance transform whose line searches stop at the radius (a
///    distance above r² is never needed): the same squared distances as the CPU below r².
///  - The whole pipeline of a batch (pack, every step, unpack) is captured once as a CUDA graph
///    and replayed. process() keeps `slots` batches in flight, each on its own stream with its
///    own pinned staging buffers, so upload, compute and download overlap; host buffers that
///    are already pinned (cudaMallocHost / cudaHostRegister, or PinnedBuffer below) are copied
///    by DMA directly, pageable ones are staged through pinned memory by OpenMP threads.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "poreforge/morphology.hpp"
#include "poreforge/volume.hpp"

namespace poreforge::cuda {

/// One step of a pipeline: `op` with `element`, `iterations` times (open/close: each half).
struct MorphStep {
  MorphOp op = MorphOp::erode;
  StructuringElement element;
  int iterations = 1;
};

struct PipelineConfig {
  Shape frame;             ///< one frame: nx × ny × 1 (an image) or nx × ny × nz (a volume)
  Spacing spacing;         ///< for ball elements
  std::vector<MorphStep> steps;
  int batch = 1;           ///< frames per launch; more than 1 only for 2D frames
  int slots = 3;           ///< batches in flight in process()
};

/// Bytes of device memory a pipeline takes (all slots).
std::size_t pipeline_workspace_bytes(const PipelineConfig& config);

/// Timing of one process() call, from CUDA events on the pipeline's streams.
struct StreamStats {
  int64_t frames = 0;
  double milliseconds = 0;  ///< first upload to last download
  double frames_per_second() const { return milliseconds > 0 ? 1000.0 * double(frames) / milliseconds : 0; }
};

class FramePipeline {
 public:
  /// Validates the steps (InputError: bad element, iterations < 1, a z-extent box or ball on
  /// batched 2D frames…) and allocates every buffer once (RuntimeError naming the bytes when the
  /// device is out of memory).
  explicit FramePipeline(const PipelineConfig& config);
  ~FramePipeline();
  FramePipeline(const FramePipeline&) = delete;
  FramePipeline& operator=(const FramePipeline&) = delete;

  const PipelineConfig& config() const;
  std::size_t frame_bytes() const;  ///< voxels of one frame (one byte each)

  /// Device-resident: `frames` (1 … batch) frames at `d_in` → `d_out` (device pointers, one
  /// byte per voxel, nonzero = set; output 0/1), enqueued on stream() through a graph captured
  /// the first time this (d_in, d_out, frames) is seen. Asynchronous; in and out may not alias.
  void apply_async(const uint8_t* d_in, uint8_t* d_out, int frames);
  /// The stream apply_async uses, as a cudaStream_t cast to void*.
  void* stream() const;
  void synchronize();

  /// Streams `frames` frames from host memory `in` to host memory `out` (frame after frame,
  /// frame_bytes() each) and returns when every result is in `out`.
  StreamStats process(const uint8_t* in, uint8_t* out, int64_t frames);

  struct Impl;

 private:
  std::unique_ptr<Impl> m_impl;
};

/// Page-locked host memory (cudaMallocHost), for frames that process() copies by DMA.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  uint8_t* data() const { return m_data; }
  std::size_t size() const { return m_bytes; }

 private:
  uint8_t* m_data = nullptr;
  std::size_t m_bytes = 0;
};

/// One-shot helper on a host image (allocates per call; loops use a FramePipeline).
Mask morphology(const Mask& image, MorphOp op, const StructuringElement& element, int iterations);

}  // namespace poreforge::cuda
