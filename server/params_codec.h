#pragma once
// A trial's parameters between their three forms: search::Params (the samplers'), v1::ParamValue (the API's and the
// store's) and JSON (LADDER_PARAMS, the ensemble file).
#include <string>

#include "ladder/v1/ladder.pb.h"
#include "search/core/space.h"

namespace ladder::server {

v1::ParamValue ToProto(const search::Value& v);
search::Value FromProto(const v1::ParamValue& p);
// {"name": value, ...} with numbers as numbers.
std::string ParamsJson(const search::Params& params);

}  // namespace ladder::server
