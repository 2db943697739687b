// ladder nodes: the coordinator's nodes (state, slots, failures, why a node is down or quarantined), and
// `ladder nodes release NODE` to lift a quarantine once the node is fixed.
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "proto/proto_json.h"
#include "cli/read_only_view.h"

namespace ladder::cli {

namespace {

void PrintNodes(const v1::ServerInfoResponse& info, std::ostream& out) {
  if (info.workers().empty()) {
    out << "no nodes yet (a ladder-worker registers its node when it connects)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {{"NODE", "STATE", "SLOTS", "GPUS", "FAILURES", "LAST SEEN", "REASON"}};
  const double now = static_cast<double>(std::time(nullptr));
  for (const auto& w : info.workers()) {
    rows.push_back({w.node_id(), StateName(w.state()),
                    std::to_string(w.busy_slots()) + "/" + std::to_string(w.resources().slots()) + " busy",
                    std::to_string(w.resources().gpus()), std::to_string(w.recent_failures()),
                    w.last_seen_unix() > 0 ? FormatDuration(now - w.last_seen_unix()) + " ago" : "-",
                    w.state_reason()});
  }
  PrintColumns(rows, out);
}

}  // namespace

void SetupNodes(CLI::App& app, GlobalOptions& g, int& exit_code) {
  auto node_id = std::make_shared<std::string>();
  auto* nodes = app.add_subcommand("nodes", "List the coordinator's nodes; `nodes release NODE` lifts a quarantine");
  nodes->callback([nodes, &g, &exit_code] {
    if (!nodes->get_subcommands().empty()) return;  // `nodes release` ran
    const auto view = ServeDatabaseIfUnserved(g, "nodes");  // no coordinator: the nodes as last stored
    Client client(g);
    v1::ServerInfoRequest req;
    v1::ServerInfoResponse info;
    if (!client.Call(&v1::Ladder::Stub::ServerInfo, req, &info, "nodes", &exit_code)) return;
    if (g.json) {  // an object, as every --json output: {"version", "db_path", "workers": [WorkerInfo], ...}
      std::cout << ProtoJson(info, /*print_defaults=*/true) << "\n";
    } else {
      PrintNodes(info, std::cout);
    }
    exit_code = kOk;
  });

  auto* release = nodes->add_subcommand(
      "release", "Lift a node's quarantine once it is fixed: its failure count is cleared and it takes trials again");
  release->add_option("NODE", *node_id, "node id (as `ladder nodes` lists it)")->required();
  release->callback([node_id, &g, &exit_code] {
    Client client(g);
    v1::ReleaseNodeRequest req;
    req.set_node_id(*node_id);
    v1::ReleaseNodeResponse resp;
    if (!client.Call(&v1::Ladder::Stub::ReleaseNode, req, &resp, "nodes release", &exit_code)) return;
    if (g.json) {
      std::cout << ProtoJson(resp.worker(), /*print_defaults=*/true) << "\n";
    } else {
      std::cout << "node " << resp.worker().node_id() << " released from quarantine: now "
                << StateName(resp.worker().state())
                << (resp.worker().state() == v1::WORKER_UP ? " (takes trials again)"
                                                             : " (takes trials once its worker connects)")
                << "\n";
    }
    exit_code = kOk;
  });
}

}  // namespace ladder::cli
