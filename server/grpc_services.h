#pragma once
// Thin gRPC adapters (callback API) over the Coordinator. Each handler posts its work onto the coordinator's
// loop and finishes its reactor from there; no handler blocks a gRPC thread.
//
// Authentication: every call carries `authorization: Bearer <token>`; AccessControl (access.h) decides from the
// token's role: reads need a viewer or admin token, calls that change state (CreateSearch, CancelSearch, AddProbe, EnqueueTrial,
// ReleaseNode, the token calls) an admin token, the worker stream a worker or admin token. Refusals:
// UNAUTHENTICATED for no token, an unknown, a revoked or an expired one; PERMISSION_DENIED for a token of the wrong
// role. A stream (Watch, a worker's Connect) is filed in OpenStreams under the token it was opened with, and ends
// UNAUTHENTICATED with the token's refusal when the token is revoked or expires.
#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>

#include "server/access.h"
#include "server/open_streams.h"
#include "server/token_admin.h"

#include "ladder/v1/ladder.grpc.pb.h"
#include "server/coordinator.h"

namespace ladder::server {

class LadderService final : public v1::Ladder::CallbackService {
 public:
  LadderService(boost::asio::io_context& loop, Coordinator& coord, const AccessControl& access, TokenAdmin& tokens,
                OpenStreams& streams)
      : loop_(loop), coord_(coord), access_(access), tokens_(tokens), streams_(streams) {}

  grpc::ServerUnaryReactor* ServerInfo(grpc::CallbackServerContext* ctx, const v1::ServerInfoRequest* req,
                                       v1::ServerInfoResponse* resp) override;
  grpc::ServerUnaryReactor* ReleaseNode(grpc::CallbackServerContext* ctx, const v1::ReleaseNodeRequest* req,
                                        v1::ReleaseNodeResponse* resp) override;
  grpc::ServerUnaryReactor* CreateSearch(grpc::CallbackServerContext* ctx, const v1::CreateSearchRequest* req,
                                         v1::CreateSearchResponse* resp) override;
  grpc::ServerUnaryReactor* ListSearches(grpc::CallbackServerContext* ctx, const v1::ListSearchesRequest* req,
                                         v1::ListSearchesResponse* resp) override;
  grpc::ServerUnaryReactor* GetSearch(grpc::CallbackServerContext* ctx, const v1::GetSearchRequest* req,
                                      v1::GetSearchResponse* resp) override;
  grpc::ServerUnaryReactor* CancelSearch(grpc::CallbackServerContext* ctx, const v1::CancelSearchRequest* req,
                                         v1::CancelSearchResponse* resp) override;
  grpc::ServerUnaryReactor* AddProbe(grpc::CallbackServerContext* ctx, const v1::AddProbeRequest* req,
                                     v1::AddProbeResponse* resp) override;
  grpc::ServerUnaryReactor* EnqueueTrial(grpc::CallbackServerContext* ctx, const v1::EnqueueTrialRequest* req,
                                         v1::EnqueueTrialResponse* resp) override;
  grpc::ServerUnaryReactor* ListTrials(grpc::CallbackServerContext* ctx, const v1::ListTrialsRequest* req,
                                       v1::ListTrialsResponse* resp) override;
  grpc::ServerUnaryReactor* GetTrial(grpc::CallbackServerContext* ctx, const v1::GetTrialRequest* req,
                                     v1::GetTrialResponse* resp) override;
  grpc::ServerWriteReactor<v1::Event>* Watch(grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) override;
  grpc::ServerUnaryReactor* CreateToken(grpc::CallbackServerContext* ctx, const v1::CreateTokenRequest* req,
                                        v1::CreateTokenResponse* resp) override;
  grpc::ServerUnaryReactor* RevokeToken(grpc::CallbackServerContext* ctx, const v1::RevokeTokenRequest* req,
                                        v1::RevokeTokenResponse* resp) override;
  grpc::ServerUnaryReactor* ListTokens(grpc::CallbackServerContext* ctx, const v1::ListTokensRequest* req,
                                       v1::ListTokensResponse* resp) override;

 private:
  Access Check(const grpc::CallbackServerContext* ctx, Need need) const;
  // Checks the caller's access, then runs `fn` on the loop and finishes with its status.
  grpc::ServerUnaryReactor* OnLoop(grpc::CallbackServerContext* ctx, const char* call, Need need,
                                   std::function<grpc::Status()> fn);
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, const char* call, Need need, const Req* req,
                                  Resp* resp, grpc::Status (Coordinator::*method)(const Req&, Resp*));

  boost::asio::io_context& loop_;
  Coordinator& coord_;
  const AccessControl& access_;
  TokenAdmin& tokens_;
  OpenStreams& streams_;  // the coordinator's loop only
};

class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  WorkerServiceImpl(boost::asio::io_context& loop, Coordinator& coord, const AccessControl& access,
                    OpenStreams& streams)
      : loop_(loop), coord_(coord), access_(access), streams_(streams) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  boost::asio::io_context& loop_;
  Coordinator& coord_;
  const AccessControl& access_;
  OpenStreams& streams_;  // the coordinator's loop only
};

// The status that refuses a call (`call`: its name) for this verdict; OK when it is allowed.
grpc::Status Refusal(const Access& access, const std::string& call);

}  // namespace ladder::server
