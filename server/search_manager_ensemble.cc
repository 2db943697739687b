// SearchManager: the spec's `ensemble:` — greedy selection over the best trials' saved validation predictions
// when the search has run its trials, and the optional retrain step that gets the members.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/token.h"
#include "search/ensemble/ensemble.h"
#include "server/params_codec.h"
#include "server/predictions_file.h"
#include "server/search_manager.h"
#include "common/wall_clock.h"
#include "server/log_component.h"

namespace ladder::server {

void SearchManager::BuildEnsemble(SearchRecord& s) {
  const auto& opt = s.spec.ensemble;
  v1::EnsembleResult out;
  out.set_metric(search::EnsembleMetricName(opt.metric));
  // Candidates: completed trials with an objective, best first, at most top_k.
  std::vector<const TrialRecord*> done;
  for (int64_t id : trials_.Of(s.proto.id()).ids) {
    const TrialRecord& t = trials_.Get(id);
    if (t.proto.state() == v1::TRIAL_COMPLETED && t.proto.has_objective() && t.Sampled()) done.push_back(&t);
  }
  const bool maximize = s.spec.objective.maximize;
  std::stable_sort(done.begin(), done.end(), [&](const TrialRecord* a, const TrialRecord* b) {
    return maximize ? a->proto.objective() > b->proto.objective() : a->proto.objective() < b->proto.objective();
  });
  if (static_cast<int>(done.size()) > opt.top_k) done.resize(static_cast<size_t>(opt.top_k));
  std::vector<search::TrialPredictions> preds;
  std::map<int64_t, int64_t> id_of_number;
  std::string error;
  for (const TrialRecord* t : done) {
    // The file's path: the template with the trial's placeholders, as in its command.
    search::SearchSpec one = s.spec;
    one.command = {opt.predictions_file};
    one.env.clear();
    auto sub = search::SubstituteCommand(one, t->params, trials_.Builtins(*t));
    if (!sub.error.empty() || sub.argv.empty()) {
      error = "ensemble.predictions_file: " + sub.error;
      break;
    }
    auto read = ReadPredictionsFile(sub.argv.front());
    if (!read.error.empty()) {
      error = "trial " + std::to_string(t->proto.number()) + ": " + read.error;
      break;
    }
    preds.push_back({t->proto.number(), std::move(*read.value)});
    id_of_number[t->proto.number()] = t->proto.id();
  }
  out.set_candidates(static_cast<int32_t>(preds.size()));
  if (error.empty() && preds.empty()) error = "no completed trial to build an ensemble from";
  if (error.empty()) {
    auto r = search::SelectEnsemble(preds, opt.metric, opt.size);
    if (!r.ok()) {
      error = r.error;
    } else {
      out.set_value(r.ensemble_metric);
      out.set_best_single_trial_id(id_of_number[r.best_single_trial]);
      out.set_best_single_trial_number(r.best_single_trial);
      out.set_best_single_value(r.best_single_metric);
      for (const auto& m : r.members) {
        auto* pm = out.add_members();
        pm->set_trial_id(id_of_number[m.trial_number]);
        pm->set_trial_number(static_cast<int32_t>(m.trial_number));
        pm->set_weight(m.weight);
      }
    }
  }
  out.set_error(error);
  std::string detail = error.empty() ? out.metric() + " " + std::to_string(out.value()) + " (best single trial " +
                                           std::to_string(out.best_single_value()) + "), " +
                                           std::to_string(out.members_size()) + " members"
                                     : error;
  hub_.Record("search_ensemble", s.proto.id(), 0, detail);
  LogInfo(kLog, "search " + std::to_string(s.proto.id()) + " ensemble: " + detail);
  *s.proto.mutable_ensemble() = std::move(out);
}

void SearchManager::CreateRetrainStep(SearchRecord& s) {
  const TrialRecord& t = trials_.Create(s.proto.id(), s.next_number++, {}, /*workflow_step=*/true);
  const int64_t id = t.proto.id();
  // The members, for the step's command: written before the step can start (atomically).
  nlohmann::json members = nlohmann::json::array();
  for (const auto& m : s.proto.ensemble().members()) {
    const TrialRecord& mt = trials_.Get(m.trial_id());
    members.push_back({{"trial_id", m.trial_id()},
                       {"trial_number", m.trial_number()},
                       {"weight", m.weight()},
                       {"objective", mt.proto.objective()},
                       {"params", nlohmann::json::parse(ParamsJson(mt.params))},
                       {"checkpoint_dir", trials_.CheckpointDir(mt)},
                       {"command", std::vector<std::string>(mt.proto.command().begin(), mt.proto.command().end())}});
  }
  nlohmann::json doc = {{"search_id", s.proto.id()},
                        {"metric", s.proto.ensemble().metric()},
                        {"value", s.proto.ensemble().value()},
                        {"members", members}};
  std::error_code ec;
  std::filesystem::create_directories(t.proto.checkpoint_dir(), ec);
  const std::string path = t.proto.checkpoint_dir() + "/ensemble.json";
  std::string write_error;
  try {
    WriteFileAtomically(path, doc.dump(2) + "\n", 0644);  // temp file, fsync, rename: never a half-written file
  } catch (const std::exception& e) {
    write_error = e.what();
  }
  s.proto.mutable_ensemble()->set_retrain_trial_id(id);
  store_.UpdateSearch(s.proto);
  hub_.Record("ensemble_retrain", s.proto.id(), id, path);
  if (!write_error.empty()) {
    trials_.FailBeforeStart(id, "ensemble.retrain: cannot write " + path + ": " + write_error);
    return;
  }
  trials_.Submit(id);
  hub_.Trial(t.proto);
  Publish(s);
  request_schedule_();
}

}  // namespace ladder::server
