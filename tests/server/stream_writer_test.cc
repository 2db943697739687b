// StreamWriter (server/stream_writer.h): the write half of the Watch and worker streams, without gRPC calls.
#include "server/stream_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ladder::server {
namespace {

bool IsAck(const std::string& m) { return m.rfind("ack", 0) == 0; }

// Records what the writer asks of the stream.
struct FakeStream {
  std::vector<std::string> writes;
  std::vector<grpc::StatusCode> finishes;
  StreamWriter<std::string> writer{[this](const std::string* m) { writes.push_back(*m); },
                                   [this](const grpc::Status& st) { finishes.push_back(st.error_code()); }};
};

TEST(StreamWriter, OneWriteIsInFlightAndTheOthersFollowInOrder) {
  FakeStream s;
  s.writer.Push("a");
  s.writer.Push("b");
  s.writer.Push("c");
  EXPECT_EQ(s.writes, (std::vector<std::string>{"a"}));
  EXPECT_EQ(s.writer.queued(), 3u);
  s.writer.WriteDone(true);
  s.writer.WriteDone(true);
  EXPECT_EQ(s.writes, (std::vector<std::string>{"a", "b", "c"}));
  s.writer.WriteDone(true);
  EXPECT_EQ(s.writer.queued(), 0u);
  EXPECT_TRUE(s.finishes.empty());
}

TEST(StreamWriter, AFinishWaitsForTheWriteInFlightAndWritesNothingMore) {
  FakeStream s;
  s.writer.Push("a");
  s.writer.Push("b");
  s.writer.Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "token revoked"));
  EXPECT_TRUE(s.writer.finishing());
  EXPECT_TRUE(s.finishes.empty()) << "a write is in flight";
  s.writer.Finish(grpc::Status::CANCELLED);  // the first status holds
  s.writer.Push("c");                        // ignored
  s.writer.WriteDone(true);
  EXPECT_EQ(s.writes, (std::vector<std::string>{"a"}));
  EXPECT_EQ(s.finishes, (std::vector<grpc::StatusCode>{grpc::StatusCode::UNAUTHENTICATED}));
}

TEST(StreamWriter, AnIdleStreamFinishesAtOnceAndAFailedWriteFinishesItOk) {
  FakeStream idle;
  idle.writer.Finish(grpc::Status::CANCELLED);
  EXPECT_EQ(idle.finishes, (std::vector<grpc::StatusCode>{grpc::StatusCode::CANCELLED}));

  FakeStream failed;
  failed.writer.Push("a");
  failed.writer.Push("b");
  failed.writer.WriteDone(false);
  EXPECT_EQ(failed.writes, (std::vector<std::string>{"a"}));
  EXPECT_EQ(failed.finishes, (std::vector<grpc::StatusCode>{grpc::StatusCode::OK}));
}

TEST(StreamWriter, AMessageOvertakesOnlyTheQueuedOnesItMayPassNeverTheOneInFlight) {
  FakeStream s;
  s.writer.Push("ack1");
  s.writer.Push("ack2");
  s.writer.Push("start1", &IsAck);  // ahead of ack2, behind ack1 (in flight)
  s.writer.Push("ack3");
  s.writer.Push("cancel1", &IsAck);  // ahead of ack2 and ack3, behind start1 (not an ack)
  s.writer.Push("ack4", nullptr);
  for (int i = 0; i < 6; ++i) s.writer.WriteDone(true);
  EXPECT_EQ(s.writes, (std::vector<std::string>{"ack1", "start1", "cancel1", "ack2", "ack3", "ack4"}));
}

}  // namespace
}  // namespace ladder::server
