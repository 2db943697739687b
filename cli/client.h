#pragma once
// Client: the CLI's connection to a coordinator — address, token, deadlines — and the mapping from gRPC
// status to the CLI's exit codes (documented in docs/guide/faults.md):
//   0 ok · 1 the operation failed (a search failed, a server error) · 2 bad input (usage, invalid spec)
//   3 cannot reach the coordinator · 4 no such search/trial · 5 not authorized
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/tls.h"
#include "ladder/v1/ladder.grpc.pb.h"

namespace ladder::cli {

namespace v1 = ::ladder::v1;

enum ExitCode { kOk = 0, kFailed = 1, kBadInput = 2, kUnreachable = 3, kNotFound = 4, kUnauthorized = 5 };

struct GlobalOptions {
  std::string server = "127.0.0.1:50051";
  bool server_given = false;  // --server or LADDER_SERVER named it (else --db may)
  // --token, else the file --token-file names, else LADDER_TOKEN, else <--db>.token, else ./ladder.db.token if present
  std::string token;
  std::string token_file;
  // --db: the database whose coordinator to talk to: its address from <db>.server (what `ladder up` writes while
  // it serves it, e.g. in a Slurm job), its token from <db>.token.
  std::string db;
  bool json = false;
  // TLS to the coordinator: --tls-ca / --tls-cert / --tls-key (or LADDER_TLS_*), or --tls-dir DIR (what `ladder
  // certs create DIR` wrote: DIR/ca.crt, DIR/client.crt, DIR/client.key); with --db and none of these, <db>.tls/
  // when it exists (ladder up --slurm makes it).
  TlsFiles tls;
  std::string tls_dir;
  // Plaintext whatever the TLS options and LADDER_TLS_* say: the CLI's own read-only coordinator on 127.0.0.1
  // (read_only_view.h).
  bool plaintext = false;
};

// The TLS files a client uses per the rules above (empty fields: plaintext).
TlsFiles ResolveTls(const GlobalOptions& g);

// Prints "ladder: <what>: <message>" on stderr and returns the exit code for the status.
int ReportRpcError(const grpc::Status& st, const std::string& what, const std::string& server);
// The exit code for a failed call (kUnreachable, kBadInput, kNotFound, kUnauthorized, kFailed), without a message.
int ExitCodeOf(const grpc::Status& st);

class Client {
 public:
  explicit Client(const GlobalOptions& g);
  v1::Ladder::Stub& stub() { return *stub_; }
  // A context with the token and a deadline (0: none).
  std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds deadline = std::chrono::seconds(30)) const;
  // True when a coordinator answers within `timeout`.
  bool Reachable(std::chrono::milliseconds timeout);
  // `st` as the user should hear it: a call that failed as unreachable over TLS whose handshake a probe of our
  // own finds refused for a certificate (common/tls_probe.h) becomes UNAUTHENTICATED with that probe's message
  // (exit 5, as a refused token); anything else is returned as it is. Probes once per Client.
  grpc::Status Explained(const grpc::Status& st);
  const std::string& server() const { return server_; }
  // One unary RPC with a fresh Context(): true when it succeeded; otherwise reports it as `what`
  // (ReportRpcError; `quiet`: no message), sets *exit_code and returns false.
  // E.g. Call(&v1::Ladder::Stub::GetSearch, req, &resp, ...).
  template <class Req, class Resp>
  bool Call(grpc::Status (v1::Ladder::Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& req,
            Resp* resp, const std::string& what, int* exit_code, bool quiet = false) {
    auto ctx = Context();
    const grpc::Status st = Explained(((*stub_).*method)(ctx.get(), req, resp));
    if (st.ok()) return true;
    *exit_code = quiet ? ExitCodeOf(st) : ReportRpcError(st, what, server_);
    return false;
  }

 private:
  std::string server_, token_;
  TlsFiles tls_;
  std::optional<grpc::Status> explained_;  // the probe's finding, once made
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Ladder::Stub> stub_;
};

// GetSearch, then ListTrials (without metrics). On an RPC error: reports it as `what`, sets *exit_code, false.
bool FetchSearchAndTrials(Client& client, int64_t search_id, const std::string& what, v1::Search* search,
                          std::vector<v1::Trial>* trials, int* exit_code);

// Every trial of a search, page after page (ListTrials answers at most 5,000 at a time). On an RPC error: reports
// it as `what` (unless quiet), sets *exit_code, false.
bool ListAllTrials(Client& client, int64_t search_id, const std::string& what, std::vector<v1::Trial>* trials,
                   int* exit_code, bool quiet = false);

// The token for talking to `server` per the rules above ("" if none found).
std::string ResolveToken(const std::string& explicit_token, const std::string& db = "",
                         const std::string& token_file = "");
// The coordinator's address per the rules above: --server/LADDER_SERVER, else <db>.server, else the default.
std::string ResolveServer(const GlobalOptions& g);

}  // namespace ladder::cli
