#pragma once
// Fixed annealing runs whose results were recorded from the annealer before its step became
// shared host/device code (step.hpp): a change of the loop that moves one rounding or one draw
// changes these numbers. Each run exercises other branches: both schedules, uniform and biased
// proposals, open and periodic boundaries, the solid PSD on and off, a random and a blobs start,
// T0 from trial moves and given, a stop by stalling.
#include <cstdint>
#include <cstdio>
#include <string>

#include "poreforge/annealer/annealer.hpp"
#include "poreforge/annealer/start.hpp"
#include "poreforge/generators.hpp"

namespace poreforge::testing {

inline anneal::Config golden_config(int which, Backend backend) {
  using namespace anneal;
  Config c;
  c.backend = backend;
  c.moves.keep_pore_connected = false;  // free proposals: the runs' records are of those
  c.schedule.trial_moves = 40;
  if (which == 0) {  // periodic, every term, biased proposals, Aarts–Korst, T0 from trial moves
    c.shape = {16, 14, 13};
    c.boundary = Boundary::periodic;
    c.targets = Targets::from_image(generate_blobs(c.shape, 0.4, 0.7, 101), c.boundary, 8, false, Backend::cpu);
    c.weights.solid_psd = 0.5;
    c.moves.interface_bias = 1.5;
    c.schedule.kind = Schedule::Kind::aarts_korst;
    c.schedule.stage_length = 37;
    c.stopping.max_evaluations = 1500;
    c.stopping.energy_tolerance = 0;
    c.stopping.stall_stages = 1000;
    c.seed = 12345;
  } else if (which == 1) {  // open, blobs start, uniform proposals, exponential, given T0
    c.shape = {18, 12, 15};
    c.boundary = Boundary::open;
    c.targets = Targets::from_image(generate_blobs(c.shape, 0.35, 0.6, 202), c.boundary, 10, false, Backend::cpu);
    c.initial = make_blob_start(c.shape, {}, c.targets, c.boundary, 0.8, false, 7, Backend::cpu);
    c.schedule.t0 = 2e-3;
    c.schedule.alpha = 0.8;
    c.schedule.stage_length = 100;
    c.stopping.max_evaluations = 1500;
    c.stopping.energy_tolerance = 0;
    c.seed = 7;
  } else {  // S2 only, a stop by stalling at a cold start
    c.shape = {20, 10, 9};
    c.boundary = Boundary::periodic;
    c.targets = Targets::from_image(generate_blobs(c.shape, 0.3, 0.8, 303), c.boundary, 6, false, Backend::cpu);
    c.weights.pore_psd = 0;
    c.moves.interface_bias = 4;
    c.schedule.t0 = 1e-9;
    c.schedule.stage_length = 50;
    c.stopping.max_evaluations = 20000;
    c.stopping.energy_tolerance = 0;
    c.stopping.stall_stages = 3;
    c.seed = 99;
  }
  return c;
}

constexpr int kGoldenRuns = 3;

// golden_summary of each run on the CPU, recorded before the step was shared.
constexpr const char* kGoldenSummaries[kGoldenRuns] = {
    "1500 1249 251 40 max_evaluations 67f09777ab645e82 T=0x1.c809f7ec9ecafp-9 E=0x1.0e0cfb8fb15b8p-5,0x1.3b851eb851e87p-7,0x1.3466c2f79297dp-8,0x1.57ca8f64476fdp-6 best=0x1.650de62a02cb8p-6 last=-0x1.a17a0fe2d95p-13",
    "1500 423 1077 15 max_evaluations 4c4ee1ecfc7d08ff T=0x1.2725dd1d243b1p-14 E=0x1.acf9c66d73b64p-5,0x1.1549b92ab7f7fp-8,0x0p+0,0x1.8a508f481cb74p-5 best=0x1.acf9c66d73b64p-5 last=0x1.0066186faabe8p-8",
    "750 82 668 15 no_improvement 6d8ced46166ff239 T=0x1.c4c2673997b72p-33 E=0x1.524a3dbf5e8acp-8,0x0p+0,0x0p+0,0x1.524a3dbf5e8acp-8 best=0x1.524a3dbf5e8acp-8 last=0x1.710b2c1695b1p-7",
};

// FNV-1a of the structure's voxels.
inline uint64_t structure_hash(const Mask& m) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; i < m.voxels(); ++i) h = (h ^ m[std::size_t(i)]) * 1099511628211ull;
  return h;
}

// The run's outcome as exact text: counts, stop reason, structure hash, every energy and the
// temperature in hexadecimal floating point (%a), so equal text is equal bits.
inline std::string golden_summary(const anneal::Annealer& a) {
  const anneal::Progress& p = a.progress();
  char buf[512];
  std::snprintf(buf, sizeof buf, "%lld %lld %lld %lld %s %016llx T=%a E=%a,%a,%a,%a best=%a last=%a",
                (long long)p.evaluations, (long long)p.accepted, (long long)p.rejected, (long long)p.stage,
                anneal::to_string(p.stopped).c_str(), (unsigned long long)structure_hash(a.structure()), p.temperature,
                p.energy.total, p.energy.pore_psd, p.energy.solid_psd, p.energy.s2, p.best.total, p.last_delta);
  return buf;
}

}  // namespace poreforge::testing
