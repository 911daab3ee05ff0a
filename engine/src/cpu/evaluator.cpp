// The CPU evaluator: a mask kept up to date, evaluated from scratch by the CPU backend.
#include "cpu_backend.hpp"
#include "poreforge/evaluator.hpp"

namespace poreforge::cpu {
namespace {

class CpuPsdEvaluator final : public PsdEvaluator {
 public:
  CpuPsdEvaluator(const Mask& phase, Boundary boundary, const Bins& bins)
      : m_phase(phase), m_boundary(boundary), m_bins(bins) {}
  void set(int64_t index, uint8_t value) override { m_phase[index] = value; }
  PsdCounts counts() override { return psd_counts(m_phase, m_boundary, m_bins); }
  Backend backend() const override { return Backend::cpu; }

 private:
  Mask m_phase;
  Boundary m_boundary;
  Bins m_bins;
};

}  // namespace

std::unique_ptr<PsdEvaluator> make_psd_evaluator(const Mask& phase, Boundary boundary, const Bins& bins) {
  return std::make_unique<CpuPsdEvaluator>(phase, boundary, bins);
}

}  // namespace poreforge::cpu
