#include "search/ensemble/ensemble_section.h"

#include "search/core/command_template.h"

namespace ladder::search::internal {

std::optional<TemplateText> ReadEnsembleSection(ErrorSink& sink, const YAML::Node& n, EnsembleOptions* o) {
  auto m = ReadMapping(sink, n, "ensemble", {"size", "top_k", "metric", "predictions_file", "retrain"});
  if (!m) return std::nullopt;
  o->enabled = true;
  if (const MapEntry* e = Find(*m, "size")) {
    if (auto v = ReadInt(sink, e->value, "ensemble.size", 1, 1000)) o->size = static_cast<int>(*v);
  }
  if (const MapEntry* e = Find(*m, "top_k")) {
    if (auto v = ReadInt(sink, e->value, "ensemble.top_k", 1, 1000)) o->top_k = static_cast<int>(*v);
  }
  if (const MapEntry* e = Find(*m, "metric")) {
    if (auto s = ReadEnum(sink, e->value, "ensemble.metric", {"accuracy", "log_loss", "mse"})) {
      o->metric = *s == "accuracy" ? EnsembleMetric::kAccuracy
                  : *s == "mse"    ? EnsembleMetric::kMse
                                   : EnsembleMetric::kLogLoss;
    }
  }
  if (const MapEntry* r = Find(*m, "retrain")) {
    if (r->value.IsScalar()) {
      std::string err;
      o->retrain = SplitCommandLine(r->value.Scalar(), &err);
      if (!err.empty()) sink.At(r->value, "ensemble.retrain", err);
    } else if (r->value.IsSequence()) {
      for (size_t i = 0; i < r->value.size(); ++i) {
        if (auto w = ReadString(sink, r->value[i], "ensemble.retrain[" + std::to_string(i) + "]"))
          o->retrain.push_back(*w);
      }
    } else {
      sink.At(r->value, "ensemble.retrain", "expected a command: a list of words or one string");
    }
    if (o->retrain.empty() && r->value.IsDefined() && !r->value.IsNull()) {
      sink.At(r->value, "ensemble.retrain", "must not be empty");
    }
  }
  const MapEntry* e = Find(*m, "predictions_file");
  if (e == nullptr) {
    sink.At(n, "ensemble.predictions_file",
            "missing required field 'predictions_file' (where a trial saves its validation predictions, e.g. "
            "\"{checkpoint_dir}/val_predictions.csv\")");
    return std::nullopt;
  }
  auto s = ReadString(sink, e->value, "ensemble.predictions_file");
  if (!s) return std::nullopt;
  if (s->empty()) {
    sink.At(e->value, "ensemble.predictions_file", "must not be empty");
    return std::nullopt;
  }
  o->predictions_file = *s;
  return TemplateText{e->value.Mark(), *s};
}

}  // namespace ladder::search::internal
