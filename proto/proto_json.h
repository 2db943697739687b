#pragma once
// A protobuf message as JSON, the one way the CLI (--json), the dashboard's JSON API and its event stream print
// one: protobuf's own JSON mapping with the .proto field names (snake_case), so a script reads the same keys from
// `ladder --json`, /api/... and the proto file.
#include <string>

#include <google/protobuf/message.h>

namespace ladder {

// `print_defaults`: also print fields at their default value (0, "", false, empty lists), which `ladder --json`
// does so that a script finds every key; the event stream leaves them out.
std::string ProtoJson(const google::protobuf::Message& m, bool print_defaults = false);

}  // namespace ladder
