#include "backend/backend_options.h"

#include <charconv>

#include "core/ascii.h"

namespace pagoda::backend {

std::string DeviceSpec::to_string() const {
  switch (kind) {
    case DeviceKind::kAuto: return "auto";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kCuda: return "cuda:" + std::to_string(index);
  }
  return "auto";
}

Expected<DeviceSpec> parse_device(std::string_view text) {
  const std::string name = ascii_to_lower(text);
  DeviceSpec spec;
  if (name == "auto") return spec;
  if (name == "cpu") {
    spec.kind = DeviceKind::kCpu;
    return spec;
  }
  const std::string_view cuda = "cuda";
  if (name.starts_with(cuda)) {
    spec.kind = DeviceKind::kCuda;
    std::string_view rest = std::string_view(name).substr(cuda.size());
    if (rest.empty()) return spec;
    if (rest.front() == ':' && rest.size() > 1) {
      rest.remove_prefix(1);
      const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), spec.index);
      if (error == std::errc() && end == rest.data() + rest.size() && spec.index >= 0) return spec;
    }
  }
  return invalid_argument("'" + std::string(text) + "' is not a device: use auto, cpu, cuda or cuda:N");
}

Expected<CpuNumerics> parse_cpu_numerics(std::string_view text) {
  const std::string name = ascii_to_lower(text);
  if (name == "fast") return CpuNumerics::kFast;
  if (name == "reference") return CpuNumerics::kReference;
  return invalid_argument("'" + std::string(text) + "' is not a numerics mode: use fast or reference");
}

Status check_memory_utilization(double share) {
  if (share > 0.0 && share <= 1.0) return Status::ok_status();
  return invalid_argument(std::to_string(share) + " is not a share of memory in (0, 1]");
}

}  // namespace pagoda::backend
