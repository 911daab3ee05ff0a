#pragma once
/// The engine for many images in a row — a batch of files, a Python loop: what a backend can
/// keep between calls is kept. On CUDA that is the engine context (its device workspace,
/// stream and captured graphs) and the device buffers for the mask and the result, made anew
/// only when the shape, spacing, boundary or PSD edges change; the CPU keeps nothing. Results
/// and errors are those of the one-shot functions (edt.hpp, local_thickness.hpp).
#include <cstdint>
#include <memory>

#include "poreforge/backend.hpp"
#include "poreforge/psd.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

class Workspace {
 public:
  /// `backend` is resolved now, as for local thickness.
  explicit Workspace(Backend backend = Backend::automatic);
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;

  Backend backend() const { return m_backend; }
  /// True when the workspace keeps what a call on this shape, spacing and boundary needs on the
  /// device (its memory need not be asked for again); false on the CPU.
  bool holds(const Shape& shape, const Spacing& spacing, Boundary boundary) const;

  Volume<float> distance_transform(const Mask& phase, Boundary boundary);
  Volume<float> local_thickness(const Mask& phase, Boundary boundary);
  PoreSizeDistribution pore_size_distribution(const Mask& phase, Boundary boundary, const Bins& bins);

  /// The same on device memory (a CuPy array's): `d_mask` N bytes (1 = phase), `d_out` N
  /// floats, x fastest, in the order of `stream` (a cudaStream_t, CuPy's current one): the
  /// work waits for what that stream has queued, not for the whole device, and the call
  /// returns when the result is written. CUDA workspaces only: InputError otherwise.
  void distance_transform(const uint8_t* d_mask, float* d_out, const Shape& shape, const Spacing& spacing,
                          Boundary boundary, void* stream);
  void local_thickness(const uint8_t* d_mask, float* d_out, const Shape& shape, const Spacing& spacing,
                       Boundary boundary, void* stream);
  PoreSizeDistribution pore_size_distribution(const uint8_t* d_mask, const Shape& shape, const Spacing& spacing,
                                              Boundary boundary, const Bins& bins, void* stream);

  struct Impl;

 private:
  Backend m_backend;
  std::unique_ptr<Impl> m_impl;  // null on the CPU
};

}  // namespace poreforge
