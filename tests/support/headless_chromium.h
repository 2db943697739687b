#pragma once
// HeadlessChromium: Debian's chromium driven over the DevTools protocol from a test (Boost.Beast's WebSocket, no
// npm): open a page, evaluate JavaScript in it, wait for a condition, take a screenshot. The browser gets its own
// profile directory and picks its own DevTools port (port 0; the port is read back from the profile's
// DevToolsActivePort file, so no other process can take it between a test's choice and the browser's bind), and is
// killed when the object goes.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <nlohmann/json.hpp>

extern char** environ;

namespace ladder::testing {

class HeadlessChromium {
 public:
  static constexpr const char* kBinary = "/usr/bin/chromium";
  static bool Available() { return std::filesystem::exists(kBinary); }

  // Starts chromium with its profile under `dir`.
  // `window`: the page's size in CSS pixels, "width,height" (what a screenshot holds).
  explicit HeadlessChromium(const std::filesystem::path& dir, const std::string& window = "1400,1000")
      : profile_(dir / "chromium-profile"), log_(dir / "chromium.log") {
    std::filesystem::remove(profile_ / "DevToolsActivePort");  // a profile used before: wait for this start's port
    std::vector<std::string> args = {kBinary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                     "--disable-extensions", "--window-size=" + window,
                                     "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                                     "--user-data-dir=" + profile_.string(), "about:blank"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string log = log_.string();
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    // A process group of its own: chromium's zygote, renderers and crashpad outlive a killed browser process and
    // keep writing into the profile, which the test's directory must be able to remove.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    if (posix_spawn(&pid_, kBinary, &fa, &attr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (pid_ < 0) throw std::runtime_error("cannot start chromium");
  }
  ~HeadlessChromium() {
    ws_.reset();
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);  // the whole group (see the constructor)
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Opens a tab on `url` and attaches to it. Waits (up to 90 s: a loaded 2-core machine starts chromium slowly)
  // for the browser to say its port; throws with the end of its log when it exits first.
  void Open(const std::string& url) {
    WaitForPort(std::chrono::seconds(90));
    nlohmann::json target;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);;) {
      try {
        target = nlohmann::json::parse(HttpGet("/json/new?" + url, boost::beast::http::verb::put));
        break;
      } catch (const std::exception&) {
        if (std::chrono::steady_clock::now() > until) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    std::string ws_url = target.at("webSocketDebuggerUrl");
    const std::string path = ws_url.substr(ws_url.find('/', ws_url.find("//") + 2));
    ws_ = std::make_unique<Ws>(ioc_);
    boost::asio::ip::tcp::resolver resolver(ioc_);
    boost::asio::connect(ws_->next_layer(), resolver.resolve("127.0.0.1", std::to_string(port_)));
    ws_->read_message_max(64 * 1024 * 1024);
    ws_->handshake("127.0.0.1:" + std::to_string(port_), path);
  }

  // Navigates the tab (same as typing the URL).
  void Navigate(const std::string& url) { Call("Page.navigate", {{"url", url}}); }

  // The value of a JavaScript expression in the page (promises awaited); null when it threw.
  nlohmann::json Eval(const std::string& expression) {
    auto r = Call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
    if (r.contains("exceptionDetails")) return nullptr;
    return r["result"].value("value", nlohmann::json());
  }

  // Waits until `expression` is truthy; false after `timeout`.
  bool WaitFor(const std::string& expression, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    for (auto until = std::chrono::steady_clock::now() + timeout;;) {
      auto v = Eval("!!(" + expression + ")");
      if (v.is_boolean() && v.get<bool>()) return true;
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Writes a PNG of the page as it is now.
  void Screenshot(const std::filesystem::path& png) {
    auto r = Call("Page.captureScreenshot", {{"format", "png"}});
    const std::string b64 = r.at("data");
    std::string bytes(boost::beast::detail::base64::decoded_size(b64.size()), '\0');
    auto n = boost::beast::detail::base64::decode(bytes.data(), b64.data(), b64.size());
    bytes.resize(n.first);
    std::ofstream(png, std::ios::binary) << bytes;
  }

 private:
  using Ws = boost::beast::websocket::stream<boost::asio::ip::tcp::socket>;

  // The port chromium bound, from the first line of <profile>/DevToolsActivePort (written once it listens).
  void WaitForPort(std::chrono::seconds timeout) {
    if (port_ > 0) return;
    for (auto until = std::chrono::steady_clock::now() + timeout;;) {
      std::ifstream in(profile_ / "DevToolsActivePort");
      int port = 0;
      if (in >> port && port > 0) {
        port_ = port;
        return;
      }
      int status = 0;
      if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("chromium exited before it listened; " + LogTail());
      }
      if (std::chrono::steady_clock::now() > until) {
        throw std::runtime_error("chromium did not listen within " + std::to_string(timeout.count()) + " s; " +
                                 LogTail());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::string LogTail() const {
    std::ifstream in(log_);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (all.size() > 2000) all = all.substr(all.size() - 2000);
    return "the end of " + log_.string() + ":\n" + all;
  }

  std::string HttpGet(const std::string& target, boost::beast::http::verb verb) {
    namespace http = boost::beast::http;
    boost::asio::ip::tcp::socket sock(ioc_);
    boost::asio::ip::tcp::resolver resolver(ioc_);
    boost::asio::connect(sock, resolver.resolve("127.0.0.1", std::to_string(port_)));
    http::request<http::empty_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(sock, req);
    boost::beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(sock, buf, res);
    if (res.result() != http::status::ok) throw std::runtime_error("devtools: " + res.body());
    return res.body();
  }

  nlohmann::json Call(const std::string& method, nlohmann::json params) {
    const int id = ++next_id_;
    ws_->write(boost::asio::buffer(nlohmann::json{{"id", id}, {"method", method}, {"params", params}}.dump()));
    for (;;) {
      boost::beast::flat_buffer buf;
      ws_->read(buf);
      auto msg = nlohmann::json::parse(boost::beast::buffers_to_string(buf.data()), nullptr, false);
      if (!msg.is_object() || msg.value("id", -1) != id) continue;  // events, other answers
      if (msg.contains("error")) throw std::runtime_error(method + ": " + msg["error"].dump());
      return msg["result"];
    }
  }

  std::filesystem::path profile_, log_;
  int port_ = 0;
  pid_t pid_ = -1;
  boost::asio::io_context ioc_;
  std::unique_ptr<Ws> ws_;
  int next_id_ = 0;
};

}  // namespace ladder::testing
