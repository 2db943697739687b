#include "cli/watch_tui.h"

#include <curses.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/format.h"
#include "cli/watch_detail.h"
#include "cli/watch_views.h"
#include "cli/watch_model.h"
#include "cli/watch_stream.h"

namespace ladder::cli {

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The screen has room for 4 significant digits.
std::string Num(double v) { return FormatNumber(v, 4); }

// The text cut (or padded) to exactly `w` columns.
std::string Fit(const std::string& s, int w) {
  if (w <= 0) return "";
  if (static_cast<int>(s.size()) >= w) return s.substr(0, static_cast<size_t>(w));
  return s + std::string(static_cast<size_t>(w) - s.size(), ' ');
}

void Put(int y, int x, const std::string& s, int w) {
  if (y < 0 || y >= LINES || x >= COLS) return;
  mvaddnstr(y, x, Fit(s, std::min(w, COLS - x)).c_str(), std::min(w, COLS - x));
}

enum class SortKey { kId, kState, kObjective, kElapsed };
const char* SortName(SortKey k) {
  switch (k) {
    case SortKey::kId: return "id";
    case SortKey::kState: return "state";
    case SortKey::kObjective: return "objective";
    default: return "elapsed";
  }
}
// The filter cycle: every trial, then one state at a time.
const v1::TrialState kFilters[] = {v1::TRIAL_STATE_UNSPECIFIED, v1::TRIAL_RUNNING, v1::TRIAL_PENDING,
                                   v1::TRIAL_COMPLETED, v1::TRIAL_FAILED, v1::TRIAL_CANCELLED};

double Elapsed(const v1::Trial& t, double now) {
  if (t.started_unix() <= 0) return 0;
  return (t.finished_unix() > 0 ? t.finished_unix() : now) - t.started_unix();
}

std::string Nodes(const v1::Trial& t) {
  std::string out;
  for (const auto& p : t.placement()) out += (out.empty() ? "" : ",") + p.node_id();
  return out.empty() ? "-" : out;
}

class Tui {
 public:
  Tui(const GlobalOptions& g, int64_t search_id) : g_(g), search_id_(search_id) {}
  int Run();

 private:
  // Everything below runs on the UI thread, with mu_ held while the model is read.
  void Draw();
  int DrawHeader(int y);
  int DrawSearches(int y);
  void DrawTrials(int y, int h);
  void DrawCurve(int y, int x, int h, int w);
  void DrawView(int y, int x, int h, int w);  // the middle panel: the curve, or view_'s (watch_views.h)
  void NextView();
  void DrawNodes(int y, int x, int h, int w);
  void DrawJournal(int y, int h);
  void DrawDetail();
  void FetchDetail();  // GetTrial of the selected trial while its detail is open (every 2 s)
  void DrawHelp();
  std::vector<const v1::Trial*> Rows() const;
  bool HandleKey(int ch);  // false: quit
  void FetchCurve(int64_t trial_id);
  // Watching every search, the stream's snapshot has no trials: the running searches' trials (or the newest
  // search's) are fetched once.
  void SeedTrials();
  void AskCancel();

  GlobalOptions g_;
  int64_t search_id_;
  std::mutex mu_;
  WatchModel model_;
  bool dirty_ = true, connected_ = true, seed_needed_ = false;
  std::string status_;
  // View state (UI thread only).
  int selected_ = 0, top_ = 0;
  int64_t selected_id_ = 0;
  SortKey sort_ = SortKey::kId;
  size_t filter_ = 0;
  bool detail_ = false, help_ = false;
  enum class View { kCurve, kPareto, kTimeline } view_ = View::kCurve;  // the middle panel (v cycles)
  int detail_top_ = 0;          // first line of the detail shown (it scrolls)
  double detail_fetched_ = 0;   // when FetchDetail last asked
  v1::Trial detail_trial_;      // its answer
  std::string message_;
  std::map<int64_t, bool> fetched_;  // trials whose stored curve was fetched
};

std::vector<const v1::Trial*> Tui::Rows() const {
  std::vector<const v1::Trial*> rows;
  const v1::TrialState want = kFilters[filter_];
  for (const auto& [id, t] : model_.trials) {
    if (search_id_ != 0 && t.search_id() != search_id_) continue;
    if (want != v1::TRIAL_STATE_UNSPECIFIED && t.state() != want) continue;
    rows.push_back(&t);
  }
  const double now = Now();
  auto better = [&](const v1::Trial* a, const v1::Trial* b) {
    auto s = model_.searches.find(a->search_id());
    const bool maximize = s != model_.searches.end() && s->second.direction() == v1::MAXIMIZE;
    if (a->has_objective() != b->has_objective()) return a->has_objective();
    return maximize ? a->objective() > b->objective() : a->objective() < b->objective();
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const v1::Trial* a, const v1::Trial* b) {
    switch (sort_) {
      case SortKey::kState: return a->state() < b->state();
      case SortKey::kObjective: return better(a, b);
      case SortKey::kElapsed: return Elapsed(*a, now) > Elapsed(*b, now);
      default: return a->id() < b->id();
    }
  });
  return rows;
}

int Tui::DrawHeader(int y) {
  std::string h = " ladder watch  " + g_.server;
  if (search_id_ != 0) {
    auto it = model_.searches.find(search_id_);
    if (it != model_.searches.end()) {
      const auto& s = it->second;
      h += "  search " + std::to_string(s.id()) + " '" + s.name() + "' " + StateName(s.state()) + "  " +
           std::to_string(s.completed()) + " done, " + std::to_string(s.running()) + " running, " +
           std::to_string(s.pending()) + " queued, " + std::to_string(s.failed()) + " failed, " +
           FormatNodeHours(s.node_seconds()) + " node-h";
      if (s.best_trial_id() != 0) {
        h += "  best " + s.objective_metric() + " " + Num(s.best_objective()) + " (trial " +
             std::to_string(s.best_trial_number()) + ")";
      }
    }
  }
  if (!connected_) h += "   DISCONNECTED: " + status_ + " (retrying)";
  attron(A_REVERSE);
  Put(y, 0, h, COLS);
  attroff(A_REVERSE);
  return y + 1;
}

int Tui::DrawSearches(int y) {
  if (search_id_ != 0) return y;
  attron(A_BOLD);
  Put(y++, 0, " SEARCHES  id  name                 state       done  run  queue  failed  best", COLS);
  attroff(A_BOLD);
  int shown = 0;
  for (auto it = model_.searches.rbegin(); it != model_.searches.rend() && shown < 4; ++it, ++shown) {
    const auto& s = it->second;
    char buf[256];
    std::snprintf(buf, sizeof buf, "           %-3lld %-20.20s %-10s %5d %4d %6d %7d  %s", static_cast<long long>(s.id()),
                  s.name().c_str(), StateName(s.state()).c_str(), s.completed(), s.running(), s.pending(), s.failed(),
                  s.best_trial_id() ? (s.objective_metric() + " " + Num(s.best_objective())).c_str() : "-");
    Put(y++, 0, buf, COLS);
  }
  return y;
}

void Tui::DrawTrials(int y, int h) {
  auto rows = Rows();
  if (!rows.empty()) {
    // Keep the selected trial selected when rows move.
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i]->id() == selected_id_) selected_ = static_cast<int>(i);
    }
    selected_ = std::clamp(selected_, 0, static_cast<int>(rows.size()) - 1);
    selected_id_ = rows[static_cast<size_t>(selected_)]->id();
  }
  const int body = std::max(1, h - 1);
  if (selected_ < top_) top_ = selected_;
  if (selected_ >= top_ + body) top_ = selected_ - body + 1;
  attron(A_BOLD);
  char head[256];
  std::snprintf(head, sizeof head,
                " TRIALS %-5s %-4s %-10s %-14s %-10s %-10s %-7s %-3s %-8s %-7s %s   [sort %s, filter %s]", "id", "#",
                "state", "nodes", "latest", "best", "rung", "att", "elapsed", "node-h", "params / note", SortName(sort_),
                filter_ == 0 ? "all" : StateName(kFilters[filter_]).c_str());
  Put(y, 0, head, COLS);
  attroff(A_BOLD);
  const double now = Now();
  for (int r = 0; r < body; ++r) {
    const size_t i = static_cast<size_t>(top_ + r);
    if (i >= rows.size()) break;
    const v1::Trial& t = *rows[i];
    const std::string metric = model_.ObjectiveOf(t.id());
    auto lv = t.last_metrics().values().find(metric);
    std::string latest = lv == t.last_metrics().values().end() ? "-" : Num(lv->second);
    std::string best = t.has_objective() ? Num(t.objective()) : "-";
    if (!t.has_objective()) {  // a running trial: the best point of its run so far
      auto c = model_.curves.find(t.id());
      auto s = model_.searches.find(t.search_id());
      if (c != model_.curves.end() && !c->second.empty() && s != model_.searches.end()) {
        double b = c->second.front().second;
        for (const auto& [step, v] : c->second) b = s->second.direction() == v1::MAXIMIZE ? std::max(b, v) : std::min(b, v);
        best = Num(b);
      }
    }
    std::string note = t.error().empty() ? FormatParams(t) : FormatParams(t) + "  | " + t.error();
    if (t.probe()) note = "[probe] " + note;  // a probe of the climb (ladder promote --probe)
    if (t.infeasible()) note = "[infeasible] " + note;  // it broke a constraint (never the best)
    auto search = model_.searches.find(t.search_id());
    auto sent = model_.sent_unix.find(t.id());
    const double node_s = NodeSecondsAt(t, sent == model_.sent_unix.end() ? t.started_unix() : sent->second, now);
    char line[512];
    std::snprintf(line, sizeof line, "        %-5lld %-4d %-10s %-14.14s %-10s %-10s %-7s %-3d %-8s %-7s %s",
                  static_cast<long long>(t.id()), t.number(), StateName(t.state()).c_str(), Nodes(t).c_str(),
                  latest.c_str(), best.c_str(),
                  RungLabel(t, search == model_.searches.end() ? nullptr : &search->second).c_str(), t.attempt(),
                  FormatDuration(Elapsed(t, now)).c_str(), FormatNodeHours(node_s).c_str(), note.c_str());
    const bool sel = static_cast<int>(i) == selected_;
    if (sel) attron(A_REVERSE);
    Put(y + 1 + r, 0, line, COLS);
    if (sel) attroff(A_REVERSE);
  }
  if (rows.empty()) Put(y + 1, 0, "        (no trials" + std::string(filter_ ? " in this state" : " yet") + ")", COLS);
}

void Tui::DrawCurve(int y, int x, int h, int w) {
  attron(A_BOLD);
  const std::string metric = model_.ObjectiveOf(selected_id_);
  Put(y, x, " CURVE trial " + std::to_string(selected_id_) + " " + metric, w);
  attroff(A_BOLD);
  auto it = model_.curves.find(selected_id_);
  if (selected_id_ == 0 || it == model_.curves.end() || it->second.empty()) {
    Put(y + 1, x, "   (no points yet)", w);
    return;
  }
  const auto& pts = it->second;
  const int ph = h - 2, pw = w - 12;
  if (ph < 2 || pw < 4) return;
  double lo = pts.front().second, hi = lo;
  int64_t s0 = pts.front().first, s1 = s0;
  for (const auto& [s, v] : pts) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v), hi = std::max(hi, v);
    s0 = std::min(s0, s), s1 = std::max(s1, s);
  }
  if (hi - lo < 1e-12) hi = lo + 1e-12;
  std::vector<std::string> grid(static_cast<size_t>(ph), std::string(static_cast<size_t>(pw), ' '));
  for (const auto& [s, v] : pts) {
    if (!std::isfinite(v)) continue;
    int cx = s1 > s0 ? static_cast<int>((s - s0) * (pw - 1) / (s1 - s0)) : 0;
    int cy = static_cast<int>(std::lround((hi - v) / (hi - lo) * (ph - 1)));
    grid[static_cast<size_t>(std::clamp(cy, 0, ph - 1))][static_cast<size_t>(std::clamp(cx, 0, pw - 1))] = '*';
  }
  for (int r = 0; r < ph; ++r) {
    std::string label = r == 0 ? Num(hi) : r == ph - 1 ? Num(lo) : "";
    char lb[32];
    std::snprintf(lb, sizeof lb, "%10s |", label.c_str());
    Put(y + 1 + r, x, lb + grid[static_cast<size_t>(r)], w);
  }
  Put(y + 1 + ph, x, "            step " + std::to_string(s0) + " .. " + std::to_string(s1) + " (" +
                         std::to_string(pts.size()) + " points)", w);
}

void Tui::DrawView(int y, int x, int h, int w) {
  if (view_ == View::kCurve) return DrawCurve(y, x, h, w);
  const auto lines = view_ == View::kPareto ? ParetoView(model_, search_id_, selected_id_, h, w)
                                            : TimelineView(model_, ViewedSearch(model_, search_id_, selected_id_),
                                                           Now(), h, w);
  for (size_t i = 0; i < lines.size() && static_cast<int>(i) < h; ++i) {
    if (i == 0) attron(A_BOLD);
    Put(y + static_cast<int>(i), x, lines[i], w);
    if (i == 0) attroff(A_BOLD);
  }
}

// curve -> Pareto (only for a search with several objectives) -> timeline -> curve.
void Tui::NextView() {
  std::lock_guard<std::mutex> g(mu_);  // keys are read without it
  if (view_ == View::kCurve) {
    auto s = model_.searches.find(ViewedSearch(model_, search_id_, selected_id_));
    view_ = s != model_.searches.end() && s->second.objectives_size() >= 2 ? View::kPareto : View::kTimeline;
  } else {
    view_ = view_ == View::kPareto ? View::kTimeline : View::kCurve;
  }
}

void Tui::DrawNodes(int y, int x, int h, int w) {
  attron(A_BOLD);
  Put(y, x, " NODES by rack", w);
  attroff(A_BOLD);
  std::map<std::string, std::vector<const v1::WorkerInfo*>> racks;
  for (const auto& [id, n] : model_.workers) {
    auto r = n.resources().labels().find("rack");
    racks[r == n.resources().labels().end() ? "-" : r->second].push_back(&n);
  }
  int row = y + 1;
  for (const auto& [rack, nodes] : racks) {
    if (row >= y + h) break;
    Put(row++, x, " rack " + rack, w);
    for (const auto* n : nodes) {
      if (row >= y + h) break;
      std::string what = n->state() == v1::WORKER_UP && n->busy_slots() == 0 ? "free" : "";
      for (int64_t trial : model_.TrialsOn(n->node_id())) {
        what += (what.empty() ? "trial " : ",") + std::to_string(trial);
      }
      char line[256];
      std::snprintf(line, sizeof line, "   %-12.12s %-11s %2d/%-2d %s", n->node_id().c_str(),
                    StateName(n->state()).c_str(), n->busy_slots(), n->resources().slots(), what.c_str());
      Put(row++, x, line, w);
    }
  }
  if (model_.workers.empty()) Put(y + 1, x, "   (no nodes)", w);
}

void Tui::DrawJournal(int y, int h) {
  attron(A_BOLD);
  Put(y, 0, " EVENTS", COLS);
  attroff(A_BOLD);
  const int n = std::min<int>(h - 1, static_cast<int>(model_.journal.size()));
  for (int i = 0; i < n; ++i) {
    const auto& j = model_.journal[model_.journal.size() - static_cast<size_t>(n) + static_cast<size_t>(i)];
    std::string line = "   " + ClockTime(j.time_unix()) + " " + j.kind();
    if (j.trial_id()) line += " trial " + std::to_string(j.trial_id());
    if (!j.detail().empty()) line += ": " + j.detail();
    Put(y + 1 + i, 0, line, COLS);
  }
}

void Tui::DrawDetail() {
  auto it = model_.trials.find(selected_id_);
  erase();
  if (it == model_.trials.end()) return;
  // The fetched copy (GetTrial: runs, journal, log tail) once it is there; the stream's until then.
  const bool fetched = detail_trial_.id() == selected_id_;
  const v1::Trial& t = fetched ? detail_trial_ : it->second;
  auto s = model_.searches.find(t.search_id());
  const auto lines = TrialDetailLines(t, s == model_.searches.end() ? nullptr : &s->second, Now());
  attron(A_REVERSE);
  Put(0, 0, " trial " + std::to_string(t.id()) + " (#" + std::to_string(t.number()) + " of search " +
                std::to_string(t.search_id()) + ")   up/down: scroll   enter/esc: back" +
                (fetched ? "" : "   (fetching its runs and log...)"), COLS);
  attroff(A_REVERSE);
  const int room = std::max(1, LINES - 1);
  detail_top_ = std::clamp(detail_top_, 0, std::max(0, static_cast<int>(lines.size()) - room));
  for (int r = 0; r < room && detail_top_ + r < static_cast<int>(lines.size()); ++r) {
    Put(1 + r, 0, lines[static_cast<size_t>(detail_top_ + r)], COLS);
  }
}

void Tui::FetchDetail() {
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!detail_ || Now() - detail_fetched_ < 2.0) return;
    id = selected_id_;
  }
  detail_fetched_ = Now();
  Client client(g_);
  v1::GetTrialRequest req;
  req.set_trial_id(id);
  v1::GetTrialResponse resp;
  auto ctx = client.Context(std::chrono::seconds(2));
  if (!client.stub().GetTrial(ctx.get(), req, &resp).ok()) return;
  std::lock_guard<std::mutex> g(mu_);
  detail_trial_ = resp.trial();
  dirty_ = true;
}

void Tui::DrawHelp() {
  erase();
  const char* lines[] = {" ladder watch: keys",
                         "",
                         "   up/down, pgup/pgdn   select a trial",
                         "   s                    sort: id, state, objective, elapsed",
                         "   f                    filter: all, running, pending, completed, failed, cancelled",
                         "   v                    the middle panel: the selected trial's curve, the Pareto front",
                         "                        (several objectives), the timeline of the trials on their nodes",
                         "   enter                the selected trial's detail (enter or esc: back)",
                         "   c                    cancel the search (asks first)",
                         "   ?                    this help",
                         "   q                    quit (the search keeps running)",
                         "",
                         " any key: back"};
  int y = 0;
  for (const char* l : lines) Put(y++, 0, l, COLS);
}

void Tui::Draw() {
  if (help_) return DrawHelp();
  if (detail_) return DrawDetail();
  erase();
  int y = DrawHeader(0);
  y = DrawSearches(y);
  const int footer = LINES - 1;
  const int log_h = std::max(4, LINES / 5);
  // The table takes what its rows need (a header and at least 2 rows), the curve the rest.
  const int rows = static_cast<int>(Rows().size());
  const int room = footer - y - log_h;
  const int table_h = std::clamp(rows + 1, 3, std::max(3, room - 8));
  const int mid_h = std::max(6, room - table_h);
  DrawTrials(y, table_h);
  y += table_h;
  const int curve_w = COLS * 3 / 5;
  DrawView(y, 0, mid_h, curve_w);
  DrawNodes(y, curve_w, mid_h, COLS - curve_w);
  DrawJournal(y + mid_h, log_h);
  attron(A_REVERSE);
  Put(footer, 0, message_.empty() ? " arrows select  s sort  f filter  v view  enter detail  c cancel  ? help  q quit"
                                  : " " + message_,
      COLS);
  attroff(A_REVERSE);
}

void Tui::FetchCurve(int64_t trial_id) {
  if (trial_id == 0 || fetched_[trial_id]) return;
  fetched_[trial_id] = true;
  Client client(g_);
  v1::GetTrialRequest req;
  req.set_trial_id(trial_id);
  req.set_include_metrics(true);
  v1::GetTrialResponse resp;
  auto ctx = client.Context(std::chrono::seconds(2));
  if (!client.stub().GetTrial(ctx.get(), req, &resp).ok()) return;
  std::lock_guard<std::mutex> g(mu_);
  auto& curve = model_.curves[trial_id];
  if (curve.empty()) model_.SetCurve(resp.trial());  // live points may have come meanwhile: keep them
}

void Tui::SeedTrials() {
  std::vector<int64_t> ids;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!seed_needed_) return;
    seed_needed_ = false;
    for (const auto& [id, s] : model_.searches) {
      if (s.state() == v1::SEARCH_RUNNING) ids.push_back(id);
    }
    if (ids.empty() && !model_.searches.empty()) ids.push_back(model_.searches.rbegin()->first);
  }
  Client client(g_);
  for (int64_t id : ids) {
    std::vector<v1::Trial> trials;
    int code = 0;
    if (!ListAllTrials(client, id, "watch", &trials, &code, /*quiet=*/true)) continue;
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& t : trials) {
      if (!model_.trials.count(t.id())) model_.trials[t.id()] = t;  // a live update may have come meanwhile
    }
    dirty_ = true;
  }
}

void Tui::AskCancel() {
  int64_t sid = search_id_;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = model_.trials.find(selected_id_);
    if (sid == 0 && it != model_.trials.end()) sid = it->second.search_id();
  }
  if (sid == 0) {
    message_ = "no search to cancel";
    return;
  }
  message_ = "cancel search " + std::to_string(sid) + "? y/n";
  {
    std::lock_guard<std::mutex> g(mu_);
    Draw();
  }
  refresh();
  timeout(-1);
  int ch = getch();
  timeout(100);
  if (ch != 'y' && ch != 'Y') {
    message_ = "not cancelled";
    return;
  }
  Client client(g_);
  v1::CancelSearchRequest req;
  req.set_search_id(sid);
  v1::CancelSearchResponse resp;
  auto ctx = client.Context(std::chrono::seconds(10));
  grpc::Status st = client.stub().CancelSearch(ctx.get(), req, &resp);
  message_ = st.ok() ? "search " + std::to_string(sid) + " cancelled" : "cancel failed: " + st.error_message();
}

bool Tui::HandleKey(int ch) {
  if (help_) {
    help_ = false;
    return true;
  }
  if (detail_) {
    if (ch == '\n' || ch == KEY_ENTER || ch == 27 || ch == 'q') detail_ = false;
    if (ch == KEY_UP || ch == 'k') --detail_top_;
    if (ch == KEY_DOWN || ch == 'j') ++detail_top_;
    if (ch == KEY_PPAGE) detail_top_ -= 10;
    if (ch == KEY_NPAGE) detail_top_ += 10;
    return true;
  }
  message_.clear();
  switch (ch) {
    case 'q': case 'Q': return false;
    case KEY_UP: case 'k': --selected_, selected_id_ = 0; break;
    case KEY_DOWN: case 'j': ++selected_, selected_id_ = 0; break;
    case KEY_PPAGE: selected_ -= 10, selected_id_ = 0; break;
    case KEY_NPAGE: selected_ += 10, selected_id_ = 0; break;
    case 'v': NextView(); break;
    case 's': sort_ = static_cast<SortKey>((static_cast<int>(sort_) + 1) % 4); break;
    case 'f': filter_ = (filter_ + 1) % std::size(kFilters), selected_ = 0, selected_id_ = 0; break;
    case '\n': case KEY_ENTER: detail_ = true, detail_top_ = 0, detail_fetched_ = 0; break;
    case '?': help_ = true; break;
    case 'c': AskCancel(); break;
    default: break;
  }
  return true;
}

int Tui::Run() {
  WatchStream::Callbacks cb;
  cb.on_event = [this](const v1::Event& ev) {
    std::lock_guard<std::mutex> g(mu_);
    if (ev.kind() == v1::Event::SNAPSHOT_DONE && search_id_ == 0) seed_needed_ = true;
    dirty_ |= model_.Apply(ev);
    return true;
  };
  cb.on_status = [this](bool connected, const std::string& why) {
    std::lock_guard<std::mutex> g(mu_);
    connected_ = connected;
    status_ = why;
    dirty_ = true;
  };
  WatchStream stream(g_, search_id_, /*journal_tail=*/200, std::move(cb));
  int stream_rc = -1;
  std::thread reader([&] {
    int rc = stream.Run();
    std::lock_guard<std::mutex> g(mu_);
    stream_rc = rc;
    dirty_ = true;
  });
  initscr();
  cbreak();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  timeout(100);
  bool running = true;
  double last_draw = 0;
  while (running) {
    int ch = getch();
    if (ch != ERR) running = HandleKey(ch);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stream_rc >= 0) break;
    }
    SeedTrials();
    FetchCurve(selected_id_);
    FetchDetail();
    const double now = Now();
    std::lock_guard<std::mutex> g(mu_);
    if (ch != ERR || ch == KEY_RESIZE || (dirty_ && now - last_draw >= 0.1) || now - last_draw >= 1.0) {
      Draw();
      refresh();
      dirty_ = false;
      last_draw = now;
    }
  }
  endwin();
  stream.Stop();
  reader.join();
  return stream_rc > 0 ? stream_rc : kOk;
}

}  // namespace

int RunWatchTui(const GlobalOptions& g, int64_t search_id) { return Tui(g, search_id).Run(); }

}  // namespace ladder::cli
