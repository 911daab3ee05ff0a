#pragma once
/// Binary morphology of 2D images and 3D volumes: erosion, dilation, opening, closing by a
/// box or a Euclidean ball, on the CPU (OpenMP) or CUDA backend with identical results. For
/// streams of frames on the GPU, see cuda_morphology.hpp (FramePipeline).
///
/// Conventions (OpenCV's defaults, so results compare one to one):
///  - A box of kx × ky × kz voxels has its anchor at (⌊kx/2⌋, ⌊ky/2⌋, ⌊kz/2⌋): output voxel x
///    looks at input voxels x − anchor … x − anchor + k − 1 along each axis, for both erosion
///    (min) and dilation (max).
///  - Outside the image never erodes and never dilates: voxels beyond the faces are ignored.
///  - A ball of radius r (physical units, the image's spacing) is closed: it holds every voxel
///    whose centre lies at distance ≤ r. Dilation gives {x : dist(x, set) ≤ r}, erosion
///    {x : every voxel within distance r is in the set}.
///  - Opening with n iterations erodes n times then dilates n times; closing the reverse.
#include <string>

#include "poreforge/backend.hpp"
#include "poreforge/volume.hpp"

namespace poreforge {

struct StructuringElement {
  enum class Kind { box, ball };
  Kind kind = Kind::box;
  int kx = 3, ky = 3, kz = 1;  ///< box size in voxels (each ≥ 1)
  double radius = 1;           ///< ball radius, physical units (> 0)

  static StructuringElement box(int kx, int ky, int kz = 1) { return {Kind::box, kx, ky, kz, 0}; }
  static StructuringElement ball(double r) { return {Kind::ball, 1, 1, 1, r}; }
  /// Parses "box:7x7", "box:3x3x3" or "ball:R"; throws InputError otherwise.
  static StructuringElement parse(const std::string& text);
  std::string to_string() const;
};

enum class MorphOp { erode, dilate, open, close };
MorphOp parse_morph_op(const std::string& text);  ///< "erode", "dilate", "open", "close"

/// Applies `op` with `element`, `iterations` times (≥ 1), to a binary mask (nonzero = set);
/// the result is 0/1. Box: O(N) per iteration whatever its size (CPU: running counts along
/// each axis; CUDA: bit-packed van Herk / Gil–Werman). Ball: one exact distance transform per
/// iteration. Throws InputError for a bad element or iteration count.
Mask morphology(const Mask& image, MorphOp op, const StructuringElement& element, int iterations = 1,
                Backend backend = Backend::automatic);

Mask erode(const Mask& image, const StructuringElement& element, int iterations = 1,
           Backend backend = Backend::automatic);
Mask dilate(const Mask& image, const StructuringElement& element, int iterations = 1,
            Backend backend = Backend::automatic);

/// Throws InputError for a bad element (box sizes < 1, radius not positive) or iteration count.
void validate_element(const StructuringElement& element, int iterations);
/// validate_element, and a bad shape or spacing of the image.
void validate_morphology(const Mask& image, const StructuringElement& element, int iterations);

}  // namespace poreforge
