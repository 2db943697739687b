#include "server/params_codec.h"

#include <nlohmann/json.hpp>

namespace ladder::server {

v1::ParamValue ToProto(const search::Value& v) {
  v1::ParamValue p;
  if (const auto* d = std::get_if<double>(&v)) p.set_float_value(*d);
  if (const auto* i = std::get_if<int64_t>(&v)) p.set_int_value(*i);
  if (const auto* s = std::get_if<std::string>(&v)) p.set_string_value(*s);
  return p;
}

search::Value FromProto(const v1::ParamValue& p) {
  switch (p.kind_case()) {
    case v1::ParamValue::kFloatValue: return p.float_value();
    case v1::ParamValue::kIntValue: return p.int_value();
    default: return p.string_value();
  }
}

std::string ParamsJson(const search::Params& params) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : params) {
    std::visit([&](const auto& x) { j[k] = x; }, v);
  }
  return j.dump();
}

}  // namespace ladder::server
