#pragma once
/// The energy's terms, registered in one list: E = Σ_k w_k · ‖d_k − d̂_k‖² / ‖d_k(0) − d̂_k‖²
/// (DESIGN §1). Each term (one file in terms/) is a plain view with `entries` squared
/// differences and `square(i)`; the Objective lays them end to end, so that both loops compute
/// every square the same way (the device one per thread) and add them up in one order. A new
/// term is its file, a member and a line in for_each, and its index in Energy::term.
#include "poreforge/host_device.hpp"
#include "poreforge/annealer/progress.hpp"
#include "poreforge/annealer/terms/chords.hpp"
#include "poreforge/annealer/terms/counts.hpp"
#include "poreforge/annealer/terms/local_porosity.hpp"
#include "poreforge/annealer/terms/openings.hpp"
#include "poreforge/annealer/terms/patterns.hpp"
#include "poreforge/annealer/terms/psd.hpp"
#include "poreforge/annealer/terms/s2.hpp"

namespace poreforge::anneal {

enum TermIndex : int {
  kPorePsd = 0,
  kSolidPsd = 1,
  kS2 = 2,
  kEuler = 3,
  kSurface = 4,
  kChords = 5,
  kOpenings = 6,
  kPatterns = 7,
  kLocalPorosity = 8,
  kTermCount = 9
};

struct Objective {
  terms::Psd pore_psd, solid_psd;
  terms::S2 s2;
  terms::Count euler{terms::Count::euler}, surface{terms::Count::surface};
  terms::Chords chords;
  terms::Openings openings;
  terms::Patterns patterns;
  terms::LocalPorosity local_porosity;
  double weight[kTermCount] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  double norm[kTermCount] = {1, 1, 1, 1, 1, 1, 1, 1, 1};  ///< each term's squared error at the start (1 if 0)

  /// The count terms' values laid end to end — χ, the surface's quanta, the interface
  /// patterns' classes, the local porosity's bins — in one block that every loop copies and
  /// restores as one.
  static constexpr int kPatternsAt = 2, kLocalPorosityAt = kPatternsAt + kInterfacePatterns;
  static constexpr int kCountValues = kLocalPorosityAt + kLocalPorosityBins;

  /// Points the count terms that are weighted at `values` (kCountValues of them), the others at
  /// nothing.
  PF_HD void attach_counts(int64_t* values) {
    euler.value = euler.entries ? values : nullptr;
    surface.value = surface.entries ? values + 1 : nullptr;
    patterns.counts = patterns.entries ? values + kPatternsAt : nullptr;
    local_porosity.counts = local_porosity.entries ? values + kLocalPorosityAt : nullptr;
  }

  /// Copies the attached count terms' values into `block` (attach_counts's layout; the slots
  /// of terms that are off are left as they are).
  PF_HD void read_counts(int64_t* block) const {
    if (euler.value) block[0] = *euler.value;
    if (surface.value) block[1] = *surface.value;
    for (int e = 0; patterns.counts && e < kInterfacePatterns; ++e) block[kPatternsAt + e] = patterns.counts[e];
    for (int e = 0; local_porosity.counts && e < kLocalPorosityBins; ++e)
      block[kLocalPorosityAt + e] = local_porosity.counts[e];
  }

  /// Writes `block` (attach_counts's layout) into the attached count terms.
  PF_HD void write_counts(const int64_t* block) const {
    if (euler.value) *euler.value = block[0];
    if (surface.value) *surface.value = block[1];
    for (int e = 0; patterns.counts && e < kInterfacePatterns; ++e) patterns.counts[e] = block[kPatternsAt + e];
    for (int e = 0; local_porosity.counts && e < kLocalPorosityBins; ++e)
      local_porosity.counts[e] = block[kLocalPorosityAt + e];
  }

  /// The list: f(index, term) for every term, in the order of the energy's entries.
  template <class F>
  PF_HD void for_each(F&& f) const {
    f(kPorePsd, pore_psd);
    f(kSolidPsd, solid_psd);
    f(kS2, s2);
    f(kEuler, euler);
    f(kSurface, surface);
    f(kChords, chords);
    f(kOpenings, openings);
    f(kPatterns, patterns);
    f(kLocalPorosity, local_porosity);
  }

  /// Squared differences of all terms together.
  PF_HD int entries() const {
    int n = 0;
    for_each([&](int, const auto& t) { n += t.entries; });
    return n;
  }

  /// The j-th squared difference (0 ≤ j < entries()).
  PF_HD double square(int j) const {
    double out = 0;
    bool found = false;
    for_each([&](int, const auto& t) {
      if (found) return;
      if (j < t.entries) {
        out = t.square(j);
        found = true;
      } else {
        j -= t.entries;
      }
    });
    return out;
  }

  /// The energy from all squares: each weighted term's sum in entry order over its
  /// normaliser, then Σ w_k·e_k in term order.
  PF_HD Energy combine(const double* squares) const {
    Energy e;
    int from = 0;
    for_each([&](int k, const auto& t) {
      if (weight[k] > 0) {
        double sum = 0;
        for (int j = from; j < from + t.entries; ++j) sum += squares[j];
        e.term(k) = sum / norm[k];
      }
      from += t.entries;
    });
    e.total = weight[0] * e.term(0);
    for (int k = 1; k < kTermCount; ++k) e.total += weight[k] * e.term(k);
    return e;
  }
};

}  // namespace poreforge::anneal
