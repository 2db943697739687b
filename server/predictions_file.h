#pragma once
// Reading a trial's validation predictions file for the ensemble selection (its format: search/ensemble/ensemble.h).
// The I/O lives here, with the caller, so that search/ stays a library without I/O.
#include <string>

#include "search/ensemble/ensemble.h"

namespace ladder::server {

// Reads and parses `path`; errors "path: cannot open the predictions file", "path: read error", or the parser's.
search::PredictionsReadResult ReadPredictionsFile(const std::string& path);

}  // namespace ladder::server
