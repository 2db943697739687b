#include "proto_json.h"

#include <google/protobuf/util/json_util.h>

namespace ladder {

std::string ProtoJson(const google::protobuf::Message& m, bool print_defaults) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opt;
  opt.preserve_proto_field_names = true;
  opt.always_print_primitive_fields = print_defaults;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opt);
  return out;
}

}  // namespace ladder
