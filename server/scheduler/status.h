#pragma once
// Status: the scheduler library's error type for expected failures (bad input, unknown ids, wrong state).
// The codes map 1:1 to gRPC status codes (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION),
// so the coordinator can pass them on unchanged. The library never aborts on caller input.
#include <string>
#include <utility>

namespace ladder::scheduler {

class Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kAlreadyExists, kFailedPrecondition };

  Status() = default;
  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(Code c, std::string m) : code_(c), message_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

}  // namespace ladder::scheduler
