#pragma once
// HttpServer: the web dashboard and its JSON API, served from inside ladder-server (Boost.Beast).
//
// Threads: its own io_context on its own thread. It never runs on the coordinator's loop and never waits for it:
// a request that needs the coordinator's state posts one call onto the loop (the same Coordinator methods the
// gRPC service calls), and the loop posts the answer back here, where it is turned into JSON and written. An
// event stream subscribes like a Watch call; the loop only copies each event into the stream's queue here.
//
// Routes:
//   GET  /, /app.js, /app.css, /vendor/...       the embedded page (web_assets.h); any other path is 404
//   GET  /login?token=T[&next=#/search/ID], POST /login (token=T)
//                                                 sets the session cookie (HttpOnly, SameSite=Strict), then 303 /
//   GET  /api/server | /api/searches | /api/searches/ID | /api/searches/ID/trials[?view=table] | /api/trials/ID[?metrics=1]
//                                                 the gRPC read calls as JSON (protobuf's mapping, field names)
//   GET  /api/searches/ID/curves?metric=NAME[&per_trial=K]
//                                                 every trial's points of one metric (at most K, evenly spaced), compact:
//                                                 {"metric": NAME, "trials": {"ID": [[step, value], ...]}}; read
//                                                 on the HTTP thread through its own read-only SQLite connection
//                                                 (WAL readers do not wait for the writer), not on the loop
//   GET  /api/session                             {"csrf": ...} for the page's state-changing calls
//   GET  /api/events[?search=ID]                  Server-Sent Events: the Watch stream, one JSON event per
//                                                 message; a journal entry's seq is its id, so a reconnect
//                                                 (Last-Event-ID) resumes the journal after it
//   POST /api/searches/ID/cancel                  CancelSearch
// Security: every /api/ call needs a token of the coordinator — `Authorization: Bearer T`, or the session cookie
// set by /login — of the viewer or admin role; a POST needs the admin role (403 for a viewer) and, with the
// cookie, the header X-CSRF-Token (from /api/session, which also says the session's role), which another site
// cannot read or send. A session is judged at every request by the token it was made from, and ends on its own
// (idle, absolute lifetime): dashboard_auth.h, dashboard_sessions.h. A revoked or expired token is answered 401
// saying so, and the event streams opened with it get a last `event: ended` and close. With HttpOptions.tls the
// dashboard is served over HTTPS only. Requests are limited in size; an event-stream client that stops reading is
// dropped once max_queued_bytes wait for it (the coordinator's memory does not grow with a slow browser).
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/tls.h"
#include "server/access.h"
#include "server/http/dashboard_sessions.h"

namespace ladder::server {

class Coordinator;

struct HttpOptions {
  std::string listen = "127.0.0.1:0";  // host:port; port 0 picks a free one
  const AccessControl* access = nullptr;  // who may do what (open(): no login, ladder-server --no-token)
  TlsFiles tls;                           // cert + key: serve HTTPS
  std::string db_path;                 // the coordinator's database, read-only for bulk reads (curves)
  size_t max_request_bytes = 64 * 1024;
  size_t max_queued_bytes = 8 * 1024 * 1024;  // per event stream
  std::chrono::seconds request_timeout{30};
  SessionLimits sessions;                     // the logins' idle and absolute lifetimes (dashboard_sessions.h)
  std::function<std::chrono::steady_clock::time_point()> clock;  // what sessions age by; empty: steady_clock
};

class HttpServer {
 public:
  HttpServer(HttpOptions options, boost::asio::io_context& coordinator_loop, Coordinator& coordinator);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving; throws std::runtime_error naming the address when it cannot listen.
  void Start();
  // Closes the listener and every connection, and joins the thread.
  void Stop();
  int port() const { return port_; }
  // http://host:port/
  std::string url() const;
  // Event-stream clients dropped so far because they stopped reading (max_queued_bytes).
  size_t dropped_streams() const;

  struct Impl;

 private:
  HttpOptions opt_;
  std::shared_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
  int64_t subscription_ = 0;  // opt_.access: a token's end closes its event streams
};

}  // namespace ladder::server
