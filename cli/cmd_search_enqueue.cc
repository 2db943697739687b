// ladder search enqueue ID PARAMS: a known point for a running search (v1::EnqueueTrialRequest), run before its
// next sampled trial. PARAMS is NAME=VALUE[,NAME=VALUE...]; the coordinator reads it against the search's space.
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "proto/proto_json.h"

namespace ladder::cli {
namespace {

struct EnqueueOptions {
  int64_t id = 0;
  std::string params;
};

// "lr=0.1,batch_size=256" into the request's map; "" when it reads, else what is wrong with it.
std::string ParseParams(const std::string& text, v1::EnqueueTrialRequest* req) {
  if (text.empty()) return "PARAMS is empty: give NAME=VALUE[,NAME=VALUE...], e.g. lr=0.1,batch_size=256";
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      return "'" + item + "' is not NAME=VALUE (PARAMS is NAME=VALUE[,NAME=VALUE...], e.g. lr=0.1,batch_size=256)";
    }
    const std::string name = item.substr(0, eq);
    if (!req->mutable_params()->insert({name, item.substr(eq + 1)}).second) {
      return "'" + name + "' is given twice";
    }
    start = comma + 1;
  }
  return "";
}

int Enqueue(const EnqueueOptions& o, GlobalOptions& g) {
  v1::EnqueueTrialRequest req;
  req.set_search_id(o.id);
  if (std::string err = ParseParams(o.params, &req); !err.empty()) {
    std::cerr << "ladder: search enqueue: " << err << "\n";
    return kBadInput;
  }
  Client client(g);
  v1::EnqueueTrialResponse resp;
  int exit_code = kOk;
  if (!client.Call(&v1::Ladder::Stub::EnqueueTrial, req, &resp, "search enqueue", &exit_code)) return exit_code;
  if (g.json) {
    std::cout << ProtoJson(resp, /*print_defaults=*/true) << "\n";
  } else {
    std::cout << "enqueued on search " << o.id << ": " << o.params << " ("
              << (resp.position() == 1 ? std::string("runs next")
                                       : std::to_string(resp.position() - 1) + " known points before it")
              << ")\n";
  }
  return kOk;
}

}  // namespace

void SetupSearchEnqueue(CLI::App* search, GlobalOptions& g, int& exit_code) {
  auto o = std::make_shared<EnqueueOptions>();
  auto* cmd = search->add_subcommand(
      "enqueue",
      "Run a configuration of your own on a running search before its next sampled trial (it counts against "
      "max_trials; the samplers learn from its result)");
  cmd->add_option("ID", o->id, "search id")->required();
  cmd->add_option("PARAMS", o->params,
                  "NAME=VALUE[,NAME=VALUE...], every active parameter of the space and nothing else, e.g. "
                  "lr=0.1,batch_size=256,optimizer=adam (a value may not hold a comma)")
      ->required();
  cmd->callback([o, &g, &exit_code] { exit_code = Enqueue(*o, g); });
}

}  // namespace ladder::cli
