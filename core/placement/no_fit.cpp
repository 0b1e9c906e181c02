#include "core/placement/no_fit.h"

#include "core/base/format_bytes.h"

namespace devmap {

std::string format_no_fit(const NoFit& f) {
  std::string out = "no placement fits the devices' memory_limit, even as micro-batches of " +
                    std::to_string(f.micro_batch) + (f.micro_batch == 1 ? " sample" : " samples") + " run lock-step";
  if (!f.closest.empty()) out += "; the closest (" + f.closest + ") needs";
  for (size_t k = 0; k < f.shortfalls.size(); ++k) {
    const DeviceShortfall& s = f.shortfalls[k];
    out += std::string(k ? "," : "") + " " + format_bytes(s.need) + " on " + s.device + ", over its " +
           format_bytes(s.limit) + " by " + format_bytes(s.need - s.limit);
    if (!s.largest_ops.empty()) {
      out += " (";
      for (size_t i = 0; i < s.largest_ops.size(); ++i)
        out += std::string(i ? ", " : "") + s.largest_ops[i].first + " " + format_bytes(s.largest_ops[i].second);
      out += ")";
    }
  }
  if (!f.largest_op.empty())
    out += "; " + f.largest_op + " alone needs " + format_bytes(f.largest_op_bytes) +
           (f.largest_op_part_of.empty() ? " and no op is split across devices"
                                         : " (a part of " + f.largest_op_part_of + ", split across devices)");
  if (f.suggestions.empty()) {
    out += "; the planner found no single change that fits: move pinned ops or raise several limits";
    return out;
  }
  out += "; to fit: ";
  for (size_t k = 0; k < f.suggestions.size(); ++k) {
    const FitSuggestion& s = f.suggestions[k];
    out += k ? ", or " : "";
    if (s.kind == FitSuggestion::Kind::kRaiseLimit)
      out += "raise " + s.device + "'s memory_limit to " + format_bytes(s.bytes);
    else
      out += "add a device with a memory_limit of " + format_bytes(s.bytes);
  }
  return out;
}

}  // namespace devmap
