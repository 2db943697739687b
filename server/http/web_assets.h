#pragma once
// The web dashboard's files (server/http/web/: the page, its script and style, the vendored uPlot), embedded in
// the binary at build time (embed_web_assets.cmake): cluster login nodes have no internet, and nothing is read
// from disk at run time. Only these exact paths exist: a request for anything else is not found, so no path can
// reach outside them.
#include <cstddef>
#include <string_view>

namespace ladder::server {

struct WebAsset {
  const char* path;          // "/index.html", "/vendor/uPlot.iife.min.js"
  const char* content_type;  // "text/html; charset=utf-8"
  const char* data;
  size_t size;
};

// The asset served at `path`, or nullptr.
const WebAsset* FindWebAsset(std::string_view path);

}  // namespace ladder::server
