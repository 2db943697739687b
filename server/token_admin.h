#pragma once
// TokenAdmin: the token calls (ladder tokens create / revoke / list) on the coordinator's loop. A new token is
// 32 random bytes as hex; the store keeps its SHA-256 only and the secret is returned once. Each change is
// committed before the call answers, then made effective in AccessControl.
#include <grpcpp/grpcpp.h>

#include "ladder/v1/ladder.pb.h"
#include "server/access.h"
#include "server/store/store.h"

namespace ladder::server {

class TokenAdmin {
 public:
  TokenAdmin(store::Store& store, AccessControl& access) : store_(store), access_(access) {}
  // At start, before any call: the store's tokens into AccessControl.
  void Load();
  grpc::Status Create(const v1::CreateTokenRequest& req, v1::CreateTokenResponse* resp);
  grpc::Status Revoke(const v1::RevokeTokenRequest& req, v1::RevokeTokenResponse* resp);
  grpc::Status List(const v1::ListTokensRequest& req, v1::ListTokensResponse* resp);

 private:
  store::Store& store_;
  AccessControl& access_;
};

}  // namespace ladder::server
