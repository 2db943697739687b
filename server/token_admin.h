#pragma once
// TokenAdmin: the token calls (ladder tokens create / revoke / list) on the coordinator's loop. A new token is
// 32 random bytes as hex; the store keeps its SHA-256 only and the secret is returned once. Each change is
// committed before the call answers, then made effective in AccessControl (which tells whoever holds a stream or
// a session opened with a revoked token).
//
// Expiry: a token created with an expiry is refused from then on (AccessControl judges each call by the clock),
// and a timer on the coordinator's loop, armed for the next expiry, tells AccessControl's subscribers at that
// moment, so that what the token opened ends too. No thread polls.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <grpcpp/grpcpp.h>

#include "ladder/v1/ladder.pb.h"
#include "server/access.h"
#include "server/store/store.h"

namespace ladder::server {

class TokenAdmin {
 public:
  TokenAdmin(store::Store& store, AccessControl& access, boost::asio::io_context& loop)
      : store_(store), access_(access), expiry_timer_(loop) {}
  // At start, before any call: the store's tokens into AccessControl, and the expiry timer armed.
  void Load();
  // On the loop, before it stops: the expiry timer is cancelled (it would keep the loop running).
  void Stop();
  grpc::Status Create(const v1::CreateTokenRequest& req, v1::CreateTokenResponse* resp);
  grpc::Status Revoke(const v1::RevokeTokenRequest& req, v1::RevokeTokenResponse* resp);
  grpc::Status List(const v1::ListTokensRequest& req, v1::ListTokensResponse* resp);

 private:
  // Tells AccessControl's subscribers of the tokens that expired, and waits for the next expiry.
  void ArmExpiry();

  store::Store& store_;
  AccessControl& access_;
  boost::asio::steady_timer expiry_timer_;
  bool stopped_ = false;
};

}  // namespace ladder::server
