#!/usr/bin/python3
"""ladder's gRPC API from Python: list the coordinator's searches, then follow one search's Watch stream.

    /usr/bin/python3 examples/python/ladder_client.py [--server 127.0.0.1:50051] [--token-file ladder.db.token]
                                                      [--search ID]

With --search it prints each event of that search (state changes, trial updates, metric points, the journal)
until the search has ended. The stubs are generated from proto/ladder/v1/ladder.proto on first use, with Debian's
protoc and grpc_python_plugin (apt: python3-grpcio python3-protobuf protobuf-compiler-grpc), into --stubs.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def load_stubs(out_dir):
    """Imports ladder_pb2 and ladder_pb2_grpc, generating them into out_dir when missing."""
    pkg = os.path.join(out_dir, "ladder", "v1")
    if not os.path.exists(os.path.join(pkg, "ladder_pb2_grpc.py")):
        os.makedirs(out_dir, exist_ok=True)
        subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"), "--python_out=" + out_dir,
                        "--grpc_out=" + out_dir, "--plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin",
                        os.path.join(ROOT, "proto", "ladder", "v1", "ladder.proto")], check=True)
    sys.path.insert(0, out_dir)
    from ladder.v1 import ladder_pb2, ladder_pb2_grpc  # noqa: E402 (generated above)
    return ladder_pb2, ladder_pb2_grpc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("LADDER_SERVER", "127.0.0.1:50051"))
    ap.add_argument("--token-file", default="ladder.db.token", help="the coordinator's token (<db>.token)")
    ap.add_argument("--search", type=int, default=0, help="follow this search until it ends")
    ap.add_argument("--stubs", default=os.environ.get("LADDER_PY_STUBS", os.path.join(HERE, "gen")))
    args = ap.parse_args()
    pb, rpc = load_stubs(args.stubs)
    import grpc

    with open(args.token_file) as f:
        token = f.read().strip()
    auth = [("authorization", "Bearer " + token)]
    stub = rpc.LadderStub(grpc.insecure_channel(args.server))
    try:
        searches = stub.ListSearches(pb.ListSearchesRequest(), metadata=auth, timeout=10).searches
    except grpc.RpcError as e:
        print(f"ladder_client: {args.server}: {e.code().name}: {e.details()}", file=sys.stderr)
        return 3
    for s in searches:
        state = pb.SearchState.Name(s.state).replace("SEARCH_", "").lower()
        best = f"best {s.objective_metric} {s.best_objective:.4g}" if s.best_trial_id else "no result yet"
        print(f"search {s.id} '{s.name}' {state}: {s.completed}/{s.max_trials} completed, {best}")
    if not args.search:
        return 0
    request = pb.WatchRequest(search_id=args.search, journal_tail=50)
    snapshot_done = False
    for ev in stub.Watch(request, metadata=auth):
        kind = pb.Event.Kind.Name(ev.kind)
        if ev.kind == pb.Event.JOURNAL:
            j = ev.journal
            print(f"journal {j.seq} {j.kind}" + (f" trial {j.trial_id}" if j.trial_id else "") + f": {j.detail}")
        elif ev.kind == pb.Event.TRIAL_UPDATED:
            print(f"trial {ev.trial.id} {pb.TrialState.Name(ev.trial.state)}")
        elif ev.kind == pb.Event.TRIAL_METRICS:
            values = " ".join(f"{k}={v:.4g}" for k, v in sorted(ev.metrics.values.items()))
            print(f"trial {ev.trial.id} step {ev.metrics.step} {values}")
        elif ev.kind == pb.Event.SEARCH_UPDATED:
            print(f"search {ev.search.id} {pb.SearchState.Name(ev.search.state)}")
        elif ev.kind == pb.Event.SNAPSHOT_DONE:
            snapshot_done = True
        else:
            print(kind.lower())
        if (snapshot_done and ev.kind in (pb.Event.SEARCH_UPDATED, pb.Event.SNAPSHOT_DONE)
                and stub.GetSearch(pb.GetSearchRequest(search_id=args.search), metadata=auth).search.state
                != pb.SEARCH_RUNNING):
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
