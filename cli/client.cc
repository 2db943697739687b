#include "cli/client.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/address.h"
#include "common/tls_probe.h"
#include "common/token.h"

namespace ladder::cli {

std::string ResolveToken(const std::string& explicit_token, const std::string& db, const std::string& token_file) {
  if (!explicit_token.empty()) return explicit_token;
  try {
    if (!token_file.empty()) return ReadTokenFile(token_file).value_or("");  // main checked it is there
  } catch (const std::exception& e) {
    std::cerr << "ladder: --token-file: " << e.what() << "\n";
    return "";
  }
  if (const char* t = std::getenv("LADDER_TOKEN"); t && *t) return t;
  try {
    if (!db.empty()) {
      if (auto t = ReadTokenFile(db + ".token")) return *t;
    }
    if (auto t = ReadTokenFile("ladder.db.token")) return *t;
  } catch (const std::exception&) {
  }
  return "";
}

std::string ResolveServer(const GlobalOptions& g) {
  if (g.server_given || g.db.empty()) return g.server;
  std::ifstream in(g.db + ".server");
  std::string address;
  if (in >> address && HostPortError(address).empty()) return address;
  return g.server;
}

TlsFiles ResolveTls(const GlobalOptions& g) {
  if (g.plaintext) return {};
  TlsFiles tls = g.tls;
  std::string dir = g.tls_dir;
  if (dir.empty() && !tls.enabled() && !g.db.empty() && std::filesystem::exists(g.db + ".tls/ca.crt")) {
    dir = g.db + ".tls";
  }
  if (!dir.empty()) {
    if (tls.ca.empty()) tls.ca = dir + "/ca.crt";
    if (tls.cert.empty() && std::filesystem::exists(dir + "/client.crt")) {
      tls.cert = dir + "/client.crt";
      tls.key = dir + "/client.key";
    }
  }
  TlsFromEnvironment(&tls);
  return tls;
}

Client::Client(const GlobalOptions& g) : server_(ResolveServer(g)), token_(ResolveToken(g.token, g.db, g.token_file)) {
  // A TLS file that cannot be read is said here; the command then fails to reach the coordinator over plaintext.
  std::shared_ptr<grpc::ChannelCredentials> creds;
  tls_ = ResolveTls(g);
  try {
    creds = MakeChannelCredentials(tls_);
  } catch (const std::exception& e) {
    std::cerr << "ladder: " << e.what() << "\n";
    creds = grpc::InsecureChannelCredentials();
  }
  channel_ = grpc::CreateChannel(server_, creds);
  stub_ = v1::Ladder::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::Context(std::chrono::milliseconds deadline) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  if (deadline.count() > 0) ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  return ctx;
}

bool Client::Reachable(std::chrono::milliseconds timeout) {
  auto ctx = Context(timeout);
  v1::ServerInfoRequest req;
  v1::ServerInfoResponse resp;
  const grpc::Status st = stub_->ServerInfo(ctx.get(), req, &resp);
  return st.ok() || st.error_code() == grpc::StatusCode::UNAUTHENTICATED;  // it answered, if not to us
}

grpc::Status Client::Explained(const grpc::Status& st) {
  if (st.error_code() != grpc::StatusCode::UNAVAILABLE || !tls_.enabled()) return st;
  if (!explained_) {
    const TlsDiagnosis d = DiagnoseTls(server_, tls_);
    explained_ = d.CertificateRefused() ? grpc::Status(grpc::StatusCode::UNAUTHENTICATED, d.message) : grpc::Status();
  }
  return explained_->ok() ? st : *explained_;
}

int ExitCodeOf(const grpc::Status& st) {
  switch (st.error_code()) {
    case grpc::StatusCode::OK: return kOk;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED: return kUnreachable;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::FAILED_PRECONDITION: return kBadInput;
    case grpc::StatusCode::NOT_FOUND: return kNotFound;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED: return kUnauthorized;
    default: return kFailed;
  }
}

int ReportRpcError(const grpc::Status& st, const std::string& what, const std::string& server) {
  const int code = ExitCodeOf(st);
  if (code == kUnreachable) {
    std::cerr << "ladder: " << what << ": cannot reach the coordinator at " << server << " (" << st.error_message()
              << ")\n  start one with `ladder up`, or pass --server HOST:PORT\n";
    // gRPC says no more than this about a TLS mismatch; the common causes, then.
    const std::string& m = st.error_message();
    if (m.find("Socket closed") != std::string::npos || m.find("andshake") != std::string::npos ||
        m.find("SSL") != std::string::npos || m.find("ssl") != std::string::npos) {
      std::cerr << "  if it serves TLS: pass --tls-dir DIR (from `ladder certs create`) or --tls-ca, and for mutual "
                   "TLS --tls-cert/--tls-key of a certificate its CA signed\n";
    }
  } else {
    // A multi-line message (a spec's errors, one per line) starts on its own line.
    const bool lines = st.error_message().find('\n') != std::string::npos;
    std::cerr << "ladder: " << what << ":" << (lines ? "\n" : " ") << st.error_message() << "\n";
  }
  return code;
}

bool FetchSearchAndTrials(Client& client, int64_t search_id, const std::string& what, v1::Search* search,
                          std::vector<v1::Trial>* trials, int* exit_code) {
  v1::GetSearchRequest sreq;
  sreq.set_search_id(search_id);
  v1::GetSearchResponse sresp;
  if (!client.Call(&v1::Ladder::Stub::GetSearch, sreq, &sresp, what, exit_code)) return false;
  if (!ListAllTrials(client, search_id, what, trials, exit_code)) return false;
  *search = sresp.search();
  return true;
}

bool ListAllTrials(Client& client, int64_t search_id, const std::string& what, std::vector<v1::Trial>* trials,
                   int* exit_code, bool quiet) {
  trials->clear();
  v1::ListTrialsRequest req;
  req.set_search_id(search_id);
  do {
    v1::ListTrialsResponse resp;
    if (!client.Call(&v1::Ladder::Stub::ListTrials, req, &resp, what, exit_code, quiet)) return false;
    for (auto& t : *resp.mutable_trials()) trials->push_back(std::move(t));
    req.set_page_token(resp.next_page_token());
  } while (req.page_token() != 0);
  return true;
}

}  // namespace ladder::cli
