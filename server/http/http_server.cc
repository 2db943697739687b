#include "server/http/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <cmath>
#include <atomic>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <type_traits>

#include "common/duration_text.h"
#include "common/log.h"
#include "server/coordinator.h"
#include "server/http/api_routes.h"
#include "server/http/curves_json.h"
#include "server/http/dashboard_auth.h"
#include "proto/proto_json.h"
#include "server/http/http_util.h"
#include "server/http/web_assets.h"
#include "server/store/sqlite_db.h"

namespace ladder::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr const char* kLog = "http";
constexpr const char* kCookie = "ladder_session";

// The HTTP thread's io_context, with shutdown() (protected in asio::execution_context) callable: it destroys the
// handlers left in it.
struct HttpLoop : asio::io_context {
  using asio::io_context::shutdown;
};

}  // namespace

// Shared by every connection; touched only on the HTTP thread (sessions, event_streams) or read-only (the rest).
struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
  Impl(HttpOptions o, asio::io_context& loop, Coordinator& c)
      : opt(std::move(o)), coord_loop(loop), coord(c), sessions(opt.sessions) {}
  HttpOptions opt;
  HttpLoop ioc;
  asio::io_context& coord_loop;
  Coordinator& coord;
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::ssl::context> ssl;  // HTTPS: HttpOptions.tls
  DashboardSessions sessions;
  // The open event streams by the token they were opened with: a token's end closes them (EndStreamsOf).
  struct EventStream {
    std::string token_sha256;
    std::function<void(const std::string& why)> end;  // holds the connection weakly
  };
  std::map<int64_t, EventStream> event_streams;
  int64_t next_event_stream = 1;
  std::unique_ptr<store::Db> reader;            // read-only, for bulk reads on this thread (opened on first use)
  std::atomic<size_t> dropped_streams{0};
  bool stopping = false;

  void Accept();
  DashboardSessions::Clock::time_point Now() const {
    return opt.clock ? opt.clock() : DashboardSessions::Clock::now();
  }
  // The token with this SHA-256 ended: each event stream opened with it gets a last event saying `why`, and closes.
  void EndStreamsOf(const std::string& sha256, const std::string& why) {
    std::vector<std::function<void(const std::string&)>> ends;
    for (auto it = event_streams.begin(); it != event_streams.end();) {
      if (it->second.token_sha256 != sha256) {
        ++it;
        continue;
      }
      ends.push_back(std::move(it->second.end));
      it = event_streams.erase(it);
    }
    for (auto& end : ends) end(why);
  }

  // Posts f onto this loop from another thread (the coordinator's). Once the loop is shut down (Shutdown), f is
  // destroyed here instead: a handler left in a shut-down loop would keep this Impl, which owns the loop, alive.
  template <class F>
  void PostFromOutside(F&& f) {
    std::lock_guard<std::mutex> lock(shutdown_mu);
    if (!shut_down) {
      asio::post(ioc, std::forward<F>(f));
      return;
    }
    [[maybe_unused]] auto dropped = std::move(f);  // destroyed under the lock, never during Shutdown
  }
  // After the HTTP thread has ended: destroys every handler left in the loop (the accept, each connection's
  // pending read or write, replies posted back), which hold the connections and through them this Impl.
  void Shutdown() {
    std::lock_guard<std::mutex> lock(shutdown_mu);
    shut_down = true;
    ioc.shutdown();
  }

 private:
  std::mutex shutdown_mu;
  bool shut_down = false;  // guarded by shutdown_mu
};

namespace {

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// One HTTP connection: requests one after the other (keep-alive), or, after GET /api/events, an event stream.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Connection(Stream stream, std::shared_ptr<HttpServer::Impl> impl)
      : stream_(std::move(stream)), impl_(std::move(impl)) {}
  ~Connection() { Unwatch(); }

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(impl_->opt.request_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) return self->Close();  // plaintext to the HTTPS port, or a client that does not trust the CA
        self->Read();
      });
    } else {
      Read();
    }
  }

  // From the coordinator's loop (via a post here): one event for the stream.
  void Push(std::shared_ptr<const v1::Event> ev) {
    if (closed_ || ending_) return;
    std::string msg;
    if (ev->kind() == v1::Event::JOURNAL) msg += "id: " + std::to_string(ev->journal().seq()) + "\n";
    msg += "data: " + ProtoJson(*ev) + "\n\n";
    queued_bytes_ += msg.size();
    if (queued_bytes_ > impl_->opt.max_queued_bytes) {
      LogWarning(kLog, "dropping an event-stream client that stopped reading (" + std::to_string(queued_bytes_) +
                           " bytes waiting)");
      ++impl_->dropped_streams;
      Close();
      return;
    }
    out_.push_back(std::move(msg));
    if (!writing_) WriteNext();
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(impl_->opt.max_request_bytes);
    Lowest().expires_after(impl_->opt.request_timeout);
    http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted) return self->Close();
      if (ec) {
        if (ec == beast::error::timeout || self->impl_->stopping) return self->Close();
        if (ec == http::error::header_limit) {
          return self->SendError(http::status::request_header_fields_too_large, "request headers too large", false);
        }
        if (ec == http::error::body_limit) return self->SendError(http::status::payload_too_large, "body too large", false);
        return self->SendError(http::status::bad_request, "malformed request: " + ec.message(), false);
      }
      self->Handle(self->parser_->release());
    });
  }

  void Send(Response res) {
    auto sp = std::make_shared<Response>(std::move(res));
    sp->set(http::field::server, "ladder");
    sp->set("X-Content-Type-Options", "nosniff");
    sp->set("X-Frame-Options", "DENY");
    sp->set(http::field::cache_control, "no-store");
    sp->prepare_payload();
    const bool keep = sp->keep_alive();
    http::async_write(stream_, *sp, [self = this->shared_from_this(), sp, keep](beast::error_code ec, size_t) {
      if (ec || !keep) return self->Close();
      self->Read();
    });
  }

  void SendError(http::status status, const std::string& message, bool keep_alive) {
    Response res{status, 11};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(keep_alive);
    res.body() = "{\"error\": " + JsonString(message) + "}\n";
    Send(std::move(res));
  }

  void SendJson(const std::string& body, bool keep_alive) {
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(keep_alive);
    res.body() = body;
    Send(std::move(res));
  }

  // The session cookie's value, when the request carries one.
  static std::optional<std::string> CookieOf(const Request& req) {
    auto it = req.find(http::field::cookie);
    if (it == req.end()) return std::nullopt;
    return CookieValue(std::string_view(it->value().data(), it->value().size()), kCookie);
  }

  // The token of the request's `Authorization: Bearer T` (nullopt without one).
  static std::optional<std::string_view> BearerOf(const Request& req) {
    auto it = req.find(http::field::authorization);
    if (it == req.end()) return std::nullopt;
    std::string_view v(it->value().data(), it->value().size());
    if (v.substr(0, 7) != "Bearer ") return std::nullopt;
    return v.substr(7);
  }

  void Handle(Request req) {
    std::string_view target(req.target().data(), req.target().size());
    const size_t q = target.find('?');
    const std::string path(target.substr(0, q));
    const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    const bool keep = req.keep_alive();
    if (path.rfind("/api/", 0) != 0 && path != "/login") return ServeAsset(req, path, keep);
    if (path == "/login") return Login(req, query, keep);
    const bool post = req.method() == http::verb::post;
    const RequestAuth auth = Authorize(*impl_->opt.access, impl_->sessions, BearerOf(req), CookieOf(req), post,
                                       impl_->Now());
    if (!auth.allowed()) return SendError(static_cast<http::status>(auth.http_status), auth.error, keep);
    if (post) {
      auto csrf = req.find("X-CSRF-Token");
      const bool csrf_ok = !auth.session ||
                           (csrf != req.end() && ConstantTimeEqual(std::string_view(csrf->value().data(),
                                                                                    csrf->value().size()),
                                                                   auth.session->csrf));
      if (!csrf_ok) return SendError(http::status::forbidden, "a POST needs the X-CSRF-Token of /api/session", keep);
      return Serve(PostRoute(path), keep);
    }
    if (req.method() != http::verb::get) return SendError(http::status::method_not_allowed, "GET or POST", keep);
    if (path == "/api/session") {
      return SendJson("{\"csrf\": " + JsonString(auth.session ? auth.session->csrf : "") +
                          ", \"role\": " + JsonString(RoleName(auth.role)) + "}\n",
                      keep);
    }
    if (path == "/api/events") return StartEvents(req, query, auth.token_sha256);
    Serve(GetRoute(path, query), keep);
  }

  void ServeAsset(const Request& req, const std::string& path, bool keep) {
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      return SendError(http::status::method_not_allowed, "GET", keep);
    }
    const WebAsset* a = FindWebAsset(path == "/" ? "/index.html" : path);
    if (!a) return SendError(http::status::not_found, "no such page: " + path, keep);
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, a->content_type);
    res.set("Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    res.keep_alive(keep);
    res.body().assign(a->data, a->size);
    Send(std::move(res));
  }

  void Login(const Request& req, std::string_view query, bool keep) {
    auto token = req.method() == http::verb::post ? Param(req.body(), "token") : Param(query, "token");
    const Access access = impl_->opt.access->Check(token.value_or(""), Need::kRead);
    if (access.allowed()) {
      // The session keeps the token's SHA-256: every request is judged by it (dashboard_auth.h).
      const std::string id = impl_->sessions.Create(access.role, access.sha256, impl_->Now());
      Response res{http::status::see_other, 11};
      // next: a view of the page to land on ("#/search/3"); nothing else, so the login cannot redirect elsewhere.
      auto next = req.method() == http::verb::post ? Param(req.body(), "next") : Param(query, "next");
      const bool view = next && next->rfind("#/", 0) == 0 &&
                        next->find_first_not_of("#/abcdefghijklmnopqrstuvwxyz0123456789") == std::string::npos;
      res.set(http::field::location, "/" + (view ? *next : std::string()));
      res.set(http::field::set_cookie, std::string(kCookie) + "=" + id + "; Path=/; HttpOnly; SameSite=Strict");
      res.keep_alive(keep);
      return Send(std::move(res));
    }
    Response res{http::status::unauthorized, 11};
    res.set(http::field::content_type, "text/html; charset=utf-8");
    res.keep_alive(keep);
    res.body() = std::string("<!doctype html><title>ladder: log in</title><body style=\"font-family:sans-serif\">") +
                 (!token                                ? ""
                  : access.verdict == Access::kRevoked  ? "<p>That token was revoked.</p>"
                  : access.verdict == Access::kExpired  ? "<p>That token expired at " + FormatUtc(access.expires_unix) + ".</p>"
                  : access.role == v1::TOKEN_ROLE_WORKER ? "<p>That is a worker's token: log in with a viewer or admin token.</p>"
                                                         : "<p>That is not a valid token of this coordinator.</p>") +
                 "<form method=post action=/login><p>A token of this coordinator (its admin token is in "
                 "<code>&lt;db&gt;.token</code> next to its database; <code>ladder tokens create --role viewer"
                 "</code> makes a read-only one):</p><input name=token type=password autofocus size=40> <button>Log in</button>"
                 "</form></body>";
    Send(std::move(res));
  }

  // Sends what the route answers: a call's JSON (run on the coordinator's loop), the curves, or its error.
  void Serve(ApiRoute route, bool keep) {
    if (route.kind == ApiRoute::kNotFound) return SendError(http::status::not_found, route.error, keep);
    if (route.kind == ApiRoute::kBadRequest) return SendError(http::status::bad_request, route.error, keep);
    if (route.kind == ApiRoute::kCurves) return Curves(route, keep);
    auto self = this->shared_from_this();
    asio::post(impl_->coord_loop, [self, route = std::move(route), keep] {
      std::shared_ptr<google::protobuf::Message> resp = route.make();
      grpc::Status st;
      Coordinator& c = self->impl_->coord;
      if (c.failed()) {
        st = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator's database failed; it has stopped");
      } else {
        try {
          st = route.run(c, resp.get());
        } catch (const store::SqliteError& e) {
          c.Fatal(e.what());
          st = grpc::Status(grpc::StatusCode::UNAVAILABLE, e.what());
        } catch (const std::exception& e) {
          st = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
        }
      }
      self->impl_->PostFromOutside([self, st, resp, keep] {
        if (!st.ok()) return self->SendError(HttpStatusOf(st), st.error_message(), keep);
        self->SendJson(ProtoJson(*resp) + "\n", keep);
      });
    });
  }

  // Every trial's points of a metric in the search (curves_json.h), read on this thread through its own connection.
  void Curves(const ApiRoute& route, bool keep) {
    try {
      if (!impl_->reader) {
        impl_->reader =
            std::make_unique<store::Db>(impl_->opt.db_path, /*quick_check=*/false, store::OpenMode::kReadOnly);
      }
      SendJson(CurvesJson(*impl_->reader, route.search_id, route.metric, route.per_trial, route.marks), keep);
    } catch (const std::exception& e) {
      SendError(http::status::service_unavailable, std::string("cannot read the database: ") + e.what(), keep);
    }
  }

  // `token_sha256`: the token the request was let in with (empty: none asked for); its end closes the stream.
  void StartEvents(const Request& req, std::string_view query, const std::string& token_sha256) {
    v1::WatchRequest watch;
    if (auto s = Param(query, "search")) watch.set_search_id(Id(*s).value_or(0));
    auto last = req.find("Last-Event-ID");
    if (last != req.end()) {
      watch.set_after_journal_seq(Id(std::string_view(last->value().data(), last->value().size())).value_or(0));
    } else {
      watch.set_journal_tail(200);
    }
    streaming_ = true;
    if (!token_sha256.empty()) {
      event_stream_id_ = impl_->next_event_stream++;
      std::weak_ptr<Connection> weak = this->shared_from_this();
      impl_->event_streams[event_stream_id_] = {token_sha256, [weak](const std::string& why) {
                                                  if (auto c = weak.lock()) c->End(why);
                                                }};
    }
    Lowest().expires_never();
    // What the kernel holds for a client that stops reading is bounded too (then the queue here fills).
    beast::error_code ignored;
    Lowest().socket().set_option(asio::socket_base::send_buffer_size(64 * 1024), ignored);
    auto head = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
    head->set(http::field::content_type, "text/event-stream");
    head->set(http::field::cache_control, "no-store");
    head->keep_alive(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    writing_ = true;
    http::async_write_header(stream_, *sr, [self = this->shared_from_this(), head, sr, watch](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) return self->Close();
      self->Watch(watch);
      self->WriteNext();
      self->AwaitHangUp();
    });
  }

  // A read that ends only when the client goes away: it holds the connection while it streams, and closes it then.
  void AwaitHangUp() {
    stream_.async_read_some(asio::buffer(hangup_), [self = this->shared_from_this()](beast::error_code ec, size_t) {
      if (ec || self->closed_) return self->Close();
      self->AwaitHangUp();  // a client sends nothing on an event stream; ignore what it does send
    });
  }

  void Watch(const v1::WatchRequest& watch) {
    if (closed_ || ending_) return;
    std::weak_ptr<Connection> weak = this->shared_from_this();
    auto impl = impl_;
    asio::post(impl_->coord_loop, [weak, impl, watch] {
      auto self = weak.lock();
      if (!self || impl->coord.failed()) return;
      // The sink runs on the coordinator's loop: it only copies the event and hands it over. It holds `impl`, so
      // the HTTP side's io_context outlives every watcher.
      int64_t id = impl->coord.AddWatcher(watch, [weak, impl](const v1::Event& ev) {
        auto copy = std::make_shared<const v1::Event>(ev);
        impl->PostFromOutside([weak, copy] {
          if (auto c = weak.lock()) c->Push(copy);
        });
      });
      impl->PostFromOutside([weak, id, impl] {
        auto c = weak.lock();
        if (!c || c->closed_) {
          asio::post(impl->coord_loop, [impl, id] { impl->coord.RemoveWatcher(id); });
          return;
        }
        c->watcher_id_ = id;
      });
    });
  }

  void WriteNext() {
    if (writing_ || out_.empty() || closed_) return;
    writing_ = true;
    // Everything queued goes in one write: a client that keeps up gets each event at once, and under a burst
    // the coordinator's process makes one send per client instead of one per event.
    auto msg = std::make_shared<std::string>(std::move(out_.front()));
    out_.pop_front();
    while (!out_.empty() && msg->size() < 256 * 1024) {
      *msg += out_.front();
      out_.pop_front();
    }
    asio::async_write(stream_, asio::buffer(*msg), [self = this->shared_from_this(), msg](beast::error_code ec, size_t) {
      self->writing_ = false;
      self->queued_bytes_ -= std::min(self->queued_bytes_, msg->size());
      if (ec || (self->ending_ && self->out_.empty())) return self->Close();
      self->WriteNext();
    });
  }

  // The token the stream was opened with ended: one last event (`event: ended`, {"error": why}) and the stream
  // closes. Nothing queued before it is sent.
  void End(const std::string& why) {
    if (closed_ || ending_) return;
    ending_ = true;
    event_stream_id_ = 0;  // already taken out of impl_->event_streams
    Unwatch();
    out_.clear();
    queued_bytes_ = 0;
    out_.push_back("event: ended\ndata: {\"error\": " + JsonString(why) + "}\n\n");
    if (!writing_) WriteNext();
  }

  void Unwatch() {
    if (watcher_id_ == 0) return;
    auto impl = impl_;
    const int64_t id = watcher_id_;
    watcher_id_ = 0;
    asio::post(impl->coord_loop, [impl, id] { impl->coord.RemoveWatcher(id); });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    out_.clear();
    Unwatch();
    if (event_stream_id_ != 0) impl_->event_streams.erase(event_stream_id_);
    event_stream_id_ = 0;
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().close();
  }

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  Stream stream_;
  std::shared_ptr<HttpServer::Impl> impl_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool streaming_ = false, writing_ = false, closed_ = false;
  bool ending_ = false;  // End: the last event is on its way, then Close
  int64_t event_stream_id_ = 0;  // in impl_->event_streams while open
  std::deque<std::string> out_;
  char hangup_[64];
  size_t queued_bytes_ = 0;
  int64_t watcher_id_ = 0;
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor->async_accept([self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
    if (self->stopping) return;
    if (!ec) {
      if (self->ssl) {
        using Tls = beast::ssl_stream<beast::tcp_stream>;
        std::make_shared<Connection<Tls>>(Tls(beast::tcp_stream(std::move(socket)), *self->ssl), self)->Start();
      } else {
        std::make_shared<Connection<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), self)->Start();
      }
    }
    self->Accept();
  });
}

HttpServer::HttpServer(HttpOptions options, asio::io_context& coordinator_loop, Coordinator& coordinator)
    : opt_(std::move(options)), impl_(std::make_shared<Impl>(opt_, coordinator_loop, coordinator)) {}

HttpServer::~HttpServer() { Stop(); }

std::string HttpServer::url() const {
  auto colon = opt_.listen.rfind(':');
  return (opt_.tls.cert.empty() ? "http://" : "https://") + opt_.listen.substr(0, colon) + ":" +
         std::to_string(port_) + "/";
}

void HttpServer::Start() {
  auto colon = opt_.listen.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("--http " + opt_.listen + ": expected host:port");
  beast::error_code ec;
  auto address = asio::ip::make_address(opt_.listen.substr(0, colon), ec);
  if (ec) throw std::runtime_error("--http " + opt_.listen + ": not an IP address: " + ec.message());
  const int port = std::stoi(opt_.listen.substr(colon + 1));
  if (!opt_.tls.cert.empty()) {
    // TLS 1.2 and up; the same certificate and key as gRPC (no client certificate: browsers log in with a token).
    impl_->ssl.emplace(asio::ssl::context::tls_server);
    impl_->ssl->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                            asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                            asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    try {
      impl_->ssl->use_certificate_chain_file(opt_.tls.cert);
      impl_->ssl->use_private_key_file(opt_.tls.key, asio::ssl::context::pem);
    } catch (const std::exception& e) {
      throw std::runtime_error("the dashboard's TLS: " + opt_.tls.cert + " / " + opt_.tls.key + ": " + e.what());
    }
  }
  tcp::endpoint ep(address, static_cast<unsigned short>(port));
  impl_->acceptor.emplace(impl_->ioc);
  impl_->acceptor->open(ep.protocol(), ec);
  if (!ec) impl_->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor->bind(ep, ec);
  if (!ec) impl_->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot serve the dashboard on " + opt_.listen + ": " + ec.message());
  port_ = impl_->acceptor->local_endpoint().port();
  // A token's end (on the coordinator's loop) closes the event streams opened with it, here.
  subscription_ = opt_.access->Subscribe([impl = impl_](const std::string& sha256, const std::string& why) {
    impl->PostFromOutside([impl, sha256, why] { impl->EndStreamsOf(sha256, why); });
  });
  impl_->Accept();
  thread_ = std::thread([impl = impl_] {
    for (;;) {
      try {
        impl->ioc.run();
        return;
      } catch (const std::exception& e) {
        LogError(kLog, std::string("handler threw: ") + e.what());
      }
    }
  });
}

size_t HttpServer::dropped_streams() const { return impl_->dropped_streams.load(); }

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  if (subscription_ != 0) opt_.access->Unsubscribe(subscription_);
  asio::post(impl_->ioc, [impl = impl_] {
    impl->stopping = true;
    beast::error_code ec;
    impl->acceptor->close(ec);
  });
  impl_->ioc.stop();
  thread_.join();
  // Else every stopped server's Impl leaked, with its connections' sockets open.
  impl_->Shutdown();
}

}  // namespace ladder::server
