#include "coordinator/plan/auto_levers.h"

#include <cstdio>
#include <optional>

#include "coordinator/plan/auto_split.h"
#include "coordinator/plan/conv_algorithm_lever.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "core/base/format_number.h"

namespace devmap {
namespace {

// One combination of levers, placed.
struct Candidate {
  std::vector<std::string> levers;  // a line each, as LeverChoice::used
  std::string name;                 // "offload parameters on cpu:0 and cpu:1, fc1 split as ..."
  Config config;
  PlacementResult result;
  std::string forbidden_by;  // non-empty: it needs an offload the config refuses ("cpu:0 and cpu:1")
};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

// The devices over their limits in the closest placement, in a line.
std::string shortfalls(const NoFit& f) {
  std::string out = "does not fit";
  for (size_t k = 0; k < f.shortfalls.size(); ++k) {
    const DeviceShortfall& s = f.shortfalls[k];
    out +=
        std::string(k ? ", " : " (") + s.device + " needs " + format_bytes(s.need) + " of its " + format_bytes(s.limit);
  }
  return out + (f.shortfalls.empty() ? "" : ")");
}

// The CPU devices offload could move parameters off: a memory_limit, no
// offload yet (`offload: none` included). `auto` does not choose a GPU's
// offload (never run on a GPU), nor offload with data-parallel replicas
// (not tested together).
std::vector<const DeviceSpec*> offloadable(const Config& config) {
  std::vector<const DeviceSpec*> out;
  if (config.data_parallel.replicas > 1) return out;
  for (const DeviceSpec& d : config.devices)
    if (d.kind == DeviceKind::kCpu && d.memory_limit > 0 && !d.offload) out.push_back(&d);
  return out;
}

std::string split_lever(const ProposedSplit& s, const NoFit& why) {
  return "split " + s.op + " " + split_description(s.shares) + " (" + s.basis + "): " + s.op + " alone needs " +
         format_bytes(why.largest_op_bytes) + ", more than any device's memory_limit";
}

// The smallest raise of one limit that fits among the candidates, as advice.
std::string smallest_raise(const std::vector<Candidate>& tried, const Config& config) {
  std::optional<uint64_t> least;
  std::string advice;
  for (const Candidate& c : tried) {
    if (c.result.fits) continue;
    for (const FitSuggestion& s : c.result.no_fit.suggestions) {
      if (s.kind != FitSuggestion::Kind::kRaiseLimit) continue;
      const DeviceSpec* d = config.find_device(s.device);
      const uint64_t limit = d ? static_cast<uint64_t>(d->memory_limit) : 0;
      const uint64_t raise = s.bytes > limit ? s.bytes - limit : 0;
      if (least && raise >= *least) continue;
      least = raise;
      advice = "raise " + s.device + "'s memory_limit to " + format_bytes(s.bytes) +
               (c.name.empty() ? "" : " (with " + c.name + ")");
    }
  }
  return advice;
}

// The message when no combination fits: the config's own account, each
// combination's, and the smallest change that fits among them.
std::string no_lever_fits(const Config& config, const NoFit& no_fit, const std::vector<Candidate>& tried) {
  std::string message = config.path + ": " + format_no_fit(no_fit);
  if (!tried.empty()) message += "; with auto's levers:";
  std::string refused_fit;
  for (size_t k = 0; k < tried.size(); ++k) {
    const Candidate& c = tried[k];
    message += std::string(k ? ";" : "") + " " + c.name + ": ";
    if (c.result.fits) {
      message += "fits (" + format_ms(c.result.plan.choice.step_seconds) + " a step predicted), but the config gives " +
                 c.forbidden_by + " `offload: none`";
      if (refused_fit.empty()) refused_fit = "drop `offload: none` from " + c.forbidden_by;
    } else {
      message += shortfalls(c.result.no_fit);
    }
  }
  const std::string raise = smallest_raise(tried, config);
  if (!refused_fit.empty())
    message += "; the smallest change that fits: " + refused_fit;
  else if (!raise.empty())
    message += "; the smallest change that fits: " + raise;
  return message;
}

// The combinations choose_levers places, in the order it tries them.
class LeverSearch {
 public:
  LeverSearch(const std::map<std::string, SplitDeviceRate>& rates, const PlaceVariant& place)
      : rates_(rates), place_(place) {}

  // The split, offload and both over `base` (the config as written, or
  // with its convs as GEMM), whose own placement found `base_no_fit`.
  void split_and_offload(const Candidate& base, const NoFit& base_no_fit) {
    for (const ProposedSplit& s : proposed_splits(base.config, base_no_fit, rates_)) {
      Candidate c = with(base, s.op + " split " + split_description(s.shares), split_lever(s, base_no_fit));
      apply_split(c.config, s.op, s.shares);
      attempt(std::move(c));
    }
    // Offload on the devices the config leaves it to, and, when that is
    // not all of them and nothing else fits, on all (to advise dropping
    // `offload: none`).
    const std::vector<const DeviceSpec*> every = offloadable(base.config);
    std::vector<const DeviceSpec*> allowed;
    for (const DeviceSpec* d : every)
      if (!d->offload_given) allowed.push_back(d);
    if (!allowed.empty()) offload(base, allowed);
    if (every.size() > allowed.size() && !best()) offload(base, every);
  }

  // The convs whose GEMM needs less workspace than oneDNN's run so: alone,
  // then with the split and offload.
  void convs_as_gemm(const Config& config) {
    const std::vector<LeanerConv> convs = convs_leaner_as_gemm(config);
    if (convs.empty()) return;
    Candidate gemm{{gemm_lever_text(convs)}, {}, config, {}, {}};
    for (size_t k = 0; k < convs.size(); ++k) gemm.name += (k ? ", " : "") + convs[k].op;
    gemm.name += " as GEMM";
    apply_gemm_convs(gemm.config, convs);
    const PlacementResult alone = attempt(gemm);
    if (!alone.fits) split_and_offload(gemm, alone.no_fit);
  }

  // The least predicted step among what fits and the config allows.
  const Candidate* best() const {
    const Candidate* out = nullptr;
    for (const Candidate& c : tried_)
      if (c.result.fits && c.forbidden_by.empty() &&
          (!out || c.result.plan.choice.step_seconds < out->result.plan.choice.step_seconds))
        out = &c;
    return out;
  }

  const std::vector<Candidate>& tried() const { return tried_; }

 private:
  PlacementResult attempt(Candidate c) {
    c.result = place_(c.config);
    tried_.push_back(std::move(c));
    return tried_.back().result;
  }

  // `base` with one more lever, named after its own.
  static Candidate with(const Candidate& base, const std::string& name, const std::string& lever) {
    Candidate c = base;
    c.name = base.name.empty() ? name : base.name + ", " + name;
    c.levers.push_back(lever);
    return c;
  }

  // Offload on `devices`, then with the split the offloaded config proposes.
  void offload(const Candidate& base, const std::vector<const DeviceSpec*>& devices) {
    std::vector<std::string> names, refused;
    for (const DeviceSpec* d : devices) {
      names.push_back(d->name);
      if (d->offload_given) refused.push_back(d->name);
    }
    const std::string name = "offload parameters on " + joined(names);
    Candidate off = with(base, name, name + ": no placement fits with every parameter on its device");
    for (DeviceSpec& d : off.config.devices)
      for (const DeviceSpec* o : devices) d.offload = d.offload || d.name == o->name;
    off.forbidden_by = joined(refused);
    const PlacementResult alone = attempt(off);
    if (alone.fits) return;
    // With offload the op needing the most memory may be another.
    for (const ProposedSplit& s : proposed_splits(off.config, alone.no_fit, rates_)) {
      Candidate both = with(off, s.op + " split " + split_description(s.shares), split_lever(s, alone.no_fit));
      apply_split(both.config, s.op, s.shares);
      attempt(std::move(both));
    }
  }

  const std::map<std::string, SplitDeviceRate>& rates_;
  const PlaceVariant& place_;
  std::vector<Candidate> tried_;
};

}  // namespace

LeverChoice choose_levers(const Config& config, const NoFit& no_fit,
                          const std::map<std::string, SplitDeviceRate>& rates, const PlaceVariant& place) {
  LeverSearch search(rates, place);
  search.split_and_offload(Candidate{{}, {}, config, {}, {}}, no_fit);
  search.convs_as_gemm(config);
  const Candidate* best = search.best();
  if (!best) throw_invalid(no_lever_fits(config, no_fit, search.tried()));
  LeverChoice choice{best->config, best->result.plan, best->levers, {}};
  for (const Candidate& c : search.tried()) {
    if (&c == best) continue;
    std::string why = !c.result.fits ? shortfalls(c.result.no_fit)
                      : !c.forbidden_by.empty()
                          ? "fits, but the config gives " + c.forbidden_by + " `offload: none`"
                          : format_ms(c.result.plan.choice.step_seconds) + " a step predicted, against " +
                                format_ms(best->result.plan.choice.step_seconds);
    choice.not_taken.push_back(c.name + ": " + why);
  }
  return choice;
}

std::optional<LeverChoice> choose_split_for_speed(const Config& config, const PlacementPlan& unsplit,
                                                  const std::map<std::string, SplitDeviceRate>& rates,
                                                  const PlaceVariant& place) {
  const std::optional<ProposedSplit> split = split_for_speed(config, rates);
  if (!split) return std::nullopt;
  Config variant = config;
  apply_split(variant, split->op, split->shares);
  const PlacementResult result = place(variant);
  const std::string name = "split " + split->op + " " + split_description(split->shares) + " (" + split->basis + ")";
  const double before = unsplit.choice.step_seconds;
  if (result.fits && result.plan.choice.step_seconds <= before * (1 - kSplitGain)) {
    const std::string why = ": " + format_ms(result.plan.choice.step_seconds) + " a step predicted, against " +
                            format_ms(before) + " unsplit";
    return LeverChoice{std::move(variant), result.plan, {name + why}, {}};
  }
  const std::string why = !result.fits ? shortfalls(result.no_fit)
                                       : format_ms(result.plan.choice.step_seconds) + " a step predicted, against " +
                                             format_ms(before) + " unsplit (a split must gain " +
                                             std::to_string(static_cast<int>(kSplitGain * 100)) + "%)";
  return LeverChoice{config, unsplit, {}, {name + ": " + why}};
}

}  // namespace devmap
