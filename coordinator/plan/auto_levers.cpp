#include "coordinator/plan/auto_levers.h"

#include <cstdio>
#include <optional>

#include "coordinator/plan/auto_split.h"
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

std::string split_lever(const std::string& op, const ProposedSplit& s, const NoFit& why) {
  return "split " + op + " " + split_description(s.shares) + " (shares " + s.basis + "): " + op + " alone needs " +
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

}  // namespace

LeverChoice choose_levers(const Config& config, const NoFit& no_fit, const std::map<std::string, double>& flops_per_s,
                          const PlaceVariant& place) {
  std::vector<Candidate> tried;
  auto attempt = [&](Candidate c) {
    c.result = place(c.config);
    tried.push_back(std::move(c));
    return tried.back().result;
  };
  // The split alone.
  for (const ProposedSplit& s : proposed_splits(config, no_fit, flops_per_s)) {
    Candidate c{{split_lever(no_fit.largest_op, s, no_fit)},
                no_fit.largest_op + " split " + split_description(s.shares),
                config,
                {},
                {}};
    apply_split(c.config, no_fit.largest_op, s.shares);
    attempt(std::move(c));
  }
  // Offload, then offload with the split the offloaded config proposes:
  // on the devices the config leaves it to, and, when that is not all of
  // them and nothing else fits, on all (to advise dropping `offload: none`).
  auto try_offload = [&](const std::vector<const DeviceSpec*>& devices) {
    Candidate off{{}, {}, config, {}, {}};
    std::vector<std::string> names, refused;
    for (const DeviceSpec* d : devices) {
      names.push_back(d->name);
      if (d->offload_given) refused.push_back(d->name);
    }
    for (DeviceSpec& d : off.config.devices)
      for (const DeviceSpec* o : devices) d.offload = d.offload || d.name == o->name;
    off.name = "offload parameters on " + joined(names);
    off.forbidden_by = joined(refused);
    off.levers.push_back(off.name + ": no placement fits with every parameter on its device");
    const PlacementResult alone = attempt(off);
    if (alone.fits) return;
    const std::string& op = alone.no_fit.largest_op;  // with offload, maybe another op than without
    for (const ProposedSplit& s : proposed_splits(off.config, alone.no_fit, flops_per_s)) {
      Candidate both = off;
      both.name += ", " + op + " split " + split_description(s.shares);
      both.levers.push_back(split_lever(op, s, alone.no_fit));
      apply_split(both.config, op, s.shares);
      attempt(std::move(both));
    }
  };
  const std::vector<const DeviceSpec*> every = offloadable(config);
  std::vector<const DeviceSpec*> allowed;
  for (const DeviceSpec* d : every)
    if (!d->offload_given) allowed.push_back(d);
  if (!allowed.empty()) try_offload(allowed);
  auto fits_allowed = [&] {
    for (const Candidate& c : tried)
      if (c.result.fits && c.forbidden_by.empty()) return true;
    return false;
  };
  if (every.size() > allowed.size() && !fits_allowed()) try_offload(every);
  // The least predicted step among what fits and the config allows.
  const Candidate* best = nullptr;
  for (const Candidate& c : tried)
    if (c.result.fits && c.forbidden_by.empty() &&
        (!best || c.result.plan.choice.step_seconds < best->result.plan.choice.step_seconds))
      best = &c;
  if (!best) throw_invalid(no_lever_fits(config, no_fit, tried));
  LeverChoice choice{best->config, best->result.plan, best->levers, {}};
  for (const Candidate& c : tried) {
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

}  // namespace devmap
