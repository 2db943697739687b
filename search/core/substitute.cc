// SubstituteCommand: fills a spec's command and env templates for one trial.
#include "search/core/command_template.h"
#include "search/core/spec.h"

namespace ladder::search {
namespace {

// Fills one template; returns false with *error set when it cannot.
bool Fill(const std::string& text, const Params& params, const std::map<std::string, std::string>& builtins,
          std::string* out, std::string* error) {
  ParsedTemplate parsed = ParseTemplate(text);
  if (!parsed.error.empty()) {
    *error = parsed.error;
    return false;
  }
  out->clear();
  for (const auto& piece : parsed.pieces) {
    if (!piece.is_placeholder) {
      *out += piece.text;
    } else if (auto p = params.find(piece.text); p != params.end()) {
      *out += FormatValue(p->second);
    } else if (auto b = builtins.find(piece.text); b != builtins.end()) {
      *out += b->second;
    } else {
      *error = "unknown placeholder {" + piece.text + "}";
      return false;
    }
  }
  return true;
}

}  // namespace

Substituted SubstituteCommand(const SearchSpec& spec, const Params& params,
                              const std::map<std::string, std::string>& builtins) {
  Substituted result;
  std::string error;
  // A word (or env variable) that mentions a conditional parameter inactive in this trial is left out, so
  // `--momentum={momentum}` disappears when momentum is inactive.
  auto mentions_inactive = [&](const std::string& text) {
    for (const auto& piece : ParseTemplate(text).pieces) {
      if (!piece.is_placeholder || params.count(piece.text) != 0) continue;
      for (const ParamSpec& p : spec.space.params) {
        if (p.name == piece.text) return true;
      }
    }
    return false;
  };
  for (size_t i = 0; i < spec.command.size(); ++i) {
    if (i > 0 && mentions_inactive(spec.command[i])) continue;
    std::string word;
    if (!Fill(spec.command[i], params, builtins, &word, &error)) {
      result.error = "command[" + std::to_string(i) + "]: " + error;
      return result;
    }
    result.argv.push_back(std::move(word));
  }
  for (const auto& [name, value] : spec.env) {
    if (mentions_inactive(value)) continue;
    std::string filled;
    if (!Fill(value, params, builtins, &filled, &error)) {
      result.error = "env." + name + ": " + error;
      return result;
    }
    result.env[name] = std::move(filled);
  }
  return result;
}

}  // namespace ladder::search
