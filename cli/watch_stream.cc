#include "cli/watch_stream.h"

#include <chrono>
#include <thread>

namespace ladder::cli {

WatchStream::WatchStream(const GlobalOptions& g, int64_t search_id, int journal_tail, Callbacks callbacks)
    : client_(g), search_id_(search_id), journal_tail_(journal_tail), cb_(std::move(callbacks)) {}

void WatchStream::Stop() {
  stopped_ = true;
  std::lock_guard<std::mutex> g(mu_);
  if (ctx_) ctx_->TryCancel();
}

int WatchStream::Run() {
  if (!client_.Reachable(std::chrono::seconds(3))) {
    return ReportRpcError(client_.Explained(grpc::Status(grpc::StatusCode::UNAVAILABLE, "no answer within 3 s")),
                          "watch", client_.server());
  }
  int64_t last_journal = 0;
  bool ever_connected = false, broken = false;
  while (!stopped_) {
    auto ctx = client_.Context(std::chrono::milliseconds(0));
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stopped_) break;
      ctx_ = ctx.get();
    }
    v1::WatchRequest req;
    req.set_search_id(search_id_);
    if (last_journal > 0) {
      req.set_after_journal_seq(last_journal);
    } else {
      req.set_journal_tail(journal_tail_);
    }
    auto reader = client_.stub().Watch(ctx.get(), req);
    v1::Event ev;
    bool first = true, keep = true;  // first: no event read yet on this stream
    while (keep && reader->Read(&ev)) {
      if (first && (broken || !ever_connected)) {
        ever_connected = true;
        if (broken && cb_.on_status) cb_.on_status(true, "");
        broken = false;
      }
      first = false;
      if (ev.kind() == v1::Event::JOURNAL && ev.journal().seq() > last_journal) last_journal = ev.journal().seq();
      keep = cb_.on_event(ev);
    }
    if (!keep) ctx->TryCancel();
    grpc::Status st = reader->Finish();
    {
      std::lock_guard<std::mutex> g(mu_);
      ctx_ = nullptr;
    }
    if (!keep || stopped_) return kOk;
    const int code = st.ok() ? kUnreachable : ExitCodeOf(st);
    if (code == kNotFound || code == kUnauthorized || code == kBadInput) {
      return ReportRpcError(st, "watch", client_.server());
    }
    if (!broken && cb_.on_status) {
      cb_.on_status(false, st.ok() ? "the coordinator ended the stream" : st.error_message());
    }
    broken = true;
    for (int i = 0; i < 10 && !stopped_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return kOk;
}

}  // namespace ladder::cli
