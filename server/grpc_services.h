#pragma once
// Thin gRPC adapters (callback API) over the Coordinator. Each handler posts its work onto the coordinator's
// loop and finishes its reactor from there; no handler blocks a gRPC thread.
//
// Authentication: when `token` is non-empty, calls that change state (CreateSearch, CancelSearch, ReleaseNode, the
// worker stream) must carry the metadata `authorization: Bearer <token>`; reads do not need it.
#include <boost/asio/io_context.hpp>
#include <string>

#include "ladder/v1/ladder.grpc.pb.h"
#include "server/coordinator.h"

namespace ladder::server {

class LadderService final : public v1::Ladder::CallbackService {
 public:
  LadderService(boost::asio::io_context& loop, Coordinator& coord, std::string token)
      : loop_(loop), coord_(coord), token_(std::move(token)) {}

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
  grpc::ServerUnaryReactor* ListTrials(grpc::CallbackServerContext* ctx, const v1::ListTrialsRequest* req,
                                       v1::ListTrialsResponse* resp) override;
  grpc::ServerUnaryReactor* GetTrial(grpc::CallbackServerContext* ctx, const v1::GetTrialRequest* req,
                                     v1::GetTrialResponse* resp) override;
  grpc::ServerWriteReactor<v1::Event>* Watch(grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) override;

 private:
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, const Req* req, Resp* resp,
                                  grpc::Status (Coordinator::*method)(const Req&, Resp*), bool needs_token);

  boost::asio::io_context& loop_;
  Coordinator& coord_;
  std::string token_;
};

class WorkerServiceImpl final : public v1::WorkerService::CallbackService {
 public:
  WorkerServiceImpl(boost::asio::io_context& loop, Coordinator& coord, std::string token)
      : loop_(loop), coord_(coord), token_(std::move(token)) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* ctx) override;

 private:
  boost::asio::io_context& loop_;
  Coordinator& coord_;
  std::string token_;
};

// True when the call carries `authorization: Bearer <token>` (or token is empty).
bool Authorized(const grpc::CallbackServerContext* ctx, const std::string& token);

}  // namespace ladder::server
