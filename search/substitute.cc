// SubstituteCommand: fills a spec's command and env templates for one trial.
#include "search/command_template.h"
#include "search/spec.h"

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
  // A conditional parameter that is inactive in this trial reads as the empty string.
  Params with_inactive = params;
  for (const ParamSpec& p : spec.space.params) with_inactive.emplace(p.name, std::string());
  for (size_t i = 0; i < spec.command.size(); ++i) {
    std::string word;
    if (!Fill(spec.command[i], with_inactive, builtins, &word, &error)) {
      result.error = "command[" + std::to_string(i) + "]: " + error;
      return result;
    }
    result.argv.push_back(std::move(word));
  }
  for (const auto& [name, value] : spec.env) {
    std::string filled;
    if (!Fill(value, with_inactive, builtins, &filled, &error)) {
      result.error = "env." + name + ": " + error;
      return result;
    }
    result.env[name] = std::move(filled);
  }
  return result;
}

}  // namespace ladder::search
