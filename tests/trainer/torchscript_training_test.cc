// ladder-train --model torchscript:FILE as a process: a resumed run (parameters and buffers from the checkpoint)
// equals an uninterrupted one; a model scripted at test time by Debian's python3-torch
// (tests/trainer/torchscript_reference.py) trains to the parameters PyTorch's own loop reaches on the same rows in
// the same order from the same file (SGD, and AdamW with the module's own loss(x, y); 20 steps, 1 rank), two Gloo
// ranks end with identical parameters, and a Conv3d-BatchNorm3d model trains under bf16 autocast. Without
// /usr/bin/python3's torch those skip.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"
#include "trainer/csv_dataset.h"
#include "trainer/sample_stream.h"

namespace ladder {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSplitSeed = 20261122;  // ladder-train's fixed train/validation split (trainer/main.cc)

void WriteData(const fs::path& path, int rows, int features, int classes) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::ofstream out(path);
  for (int r = 0; r < rows; ++r) {
    for (int f = 0; f < features; ++f) out << normal(rng) + (f == r % classes ? 1.5f : 0.0f) << ",";
    out << r % classes << "\n";
  }
}

testing::CommandResult RunTrainer(std::vector<std::string> args, const fs::path& dir) {
  args.insert(args.begin(), testing::TrainerBinary());
  return testing::RunCommand(args, dir);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A linear classifier of centred inputs whose centre is a buffer it updates in place as it trains (as
// BatchNorm's running statistics are): eval-mode outputs depend on the buffer.
void SaveCentredLinear(const std::string& path, int64_t features, int64_t classes) {
  torch::manual_seed(2);
  torch::jit::Module m("Centred");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("weight", (torch::randn({classes, features}) * 0.3).requires_grad_(), false);
  m.register_parameter("bias", torch::zeros({classes}).requires_grad_(), false);
  m.register_buffer("centre", torch::zeros({features}));
  m.define(R"(
def forward(self, x):
    if self.training:
        self.centre.mul_(0.5).add_(torch.mean(x, 0), alpha=0.5)
    return torch.matmul(x - self.centre, self.weight.t()) + self.bias
)");
  m.save(path);
}

TEST(TorchScriptTraining, AResumedRunEqualsAnUninterruptedOne) {
  testing::TempDir dir("ts-resume");
  WriteData(dir / "data.csv", 80, 6, 3);
  SaveCentredLinear((dir / "model.pt").string(), 6, 3);
  auto args = [&](const std::string& tag, int steps) {
    return std::vector<std::string>{"--data", "data.csv", "--model", "torchscript:model.pt", "--optimizer", "adamw",
                                    "--lr", "0.05", "--weight-decay", "0.1", "--batch-size", "16", "--epochs", "4",
                                    "--max-steps", std::to_string(steps), "--seed", "3", "--checkpoint",
                                    tag + ".ckpt", "--save-params", tag + ".bin", "--save-predictions", tag + ".csv",
                                    "--comm", "none"};
  };
  auto whole = RunTrainer(args("whole", 12), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto first = RunTrainer(args("half", 6), dir);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto rest = args("half", 12);
  rest.push_back("--resume");
  auto second = RunTrainer(rest, dir);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resumed from half.ckpt at step 6"), std::string::npos) << second.err;
  const auto want = testing::ReadParams(dir / "whole.bin"), got = testing::ReadParams(dir / "half.bin");
  ASSERT_EQ(want.size(), 21u);
  EXPECT_EQ(got, want);
  // The predictions read the buffer (eval mode): it came back from the checkpoint too.
  EXPECT_EQ(ReadFile(dir / "half.csv"), ReadFile(dir / "whole.csv"));
}

bool PythonTorch() {
  return std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") == 0;
}

std::string ReferenceScript() {
  return std::string(LADDER_TEST_SOURCE_DIR) + "/tests/trainer/torchscript_reference.py";
}

// The data, the two scripted models (plain.pt, own_loss.pt), and for the Python loop the training rows as
// ladder-train has them (split, standardized) and each step's rows in ladder-train's order (one rank, the whole
// training set as the batch: every step is one epoch's permutation).
int PrepareReference(const fs::path& dir, int steps) {
  WriteData(dir / "data.csv", 80, 6, 3);
  auto py = testing::RunCommand({"/usr/bin/python3", ReferenceScript(), "script", dir.string(), "6", "3"}, dir);
  EXPECT_EQ(py.exit_code, 0) << py.err;
  trainer::Dataset all, train, val;
  std::string error;
  EXPECT_TRUE(trainer::LoadCsv((dir / "data.csv").string(), &all, &error)) << error;
  trainer::SplitDataset(all, 0.2, kSplitSeed, &train, &val);
  trainer::Standardize(&train, &val);
  FILE* rows = std::fopen((dir / "train.csv").c_str(), "w");
  for (int64_t r = 0; r < train.rows; ++r) {
    for (int64_t f = 0; f < train.features; ++f) {
      std::fprintf(rows, "%.9g,", train.x[static_cast<size_t>(r * train.features + f)]);
    }
    std::fprintf(rows, "%lld\n", static_cast<long long>(train.y[static_cast<size_t>(r)]));
  }
  std::fclose(rows);
  trainer::SampleStream stream(train.rows, /*seed=*/7);
  std::ofstream order(dir / "order.csv");
  for (int s = 0; s < steps; ++s) {
    int epochs = 0;
    const auto idx = stream.Next(train.rows, &epochs);
    for (size_t i = 0; i < idx.size(); ++i) order << (i ? "," : "") << idx[i];
    order << "\n";
  }
  return static_cast<int>(train.rows);
}

TEST(TorchScriptVsPyTorch, TwentyStepsOfSgdAndAdamWReachPyTorchsParameters) {
  if (!PythonTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (apt install python3-torch)";
  testing::TempDir dir("ts-pytorch");
  const int n = PrepareReference(dir, 20);
  struct Case {
    std::string optimizer, model, lr, weight_decay;
  };
  for (const Case& c : {Case{"sgd", "plain.pt", "0.1", "0.01"}, Case{"adamw", "own_loss.pt", "0.01", "0.05"}}) {
    SCOPED_TRACE(c.optimizer);
    const std::string ours = c.optimizer + "-ladder.bin", theirs = c.optimizer + "-pytorch.bin";
    auto r = RunTrainer({"--data", "data.csv", "--model", "torchscript:" + c.model, "--optimizer", c.optimizer,
                         "--lr", c.lr, "--momentum", "0.9", "--weight-decay", c.weight_decay, "--batch-size",
                         std::to_string(n), "--epochs", "20", "--max-steps", "20", "--seed", "7", "--eval-train-rows",
                         "0", "--comm", "none", "--save-params", ours},
                        dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto py = testing::RunCommand({"/usr/bin/python3", ReferenceScript(), "train", c.model, "train.csv", "order.csv",
                                   c.optimizer, c.lr, c.weight_decay, theirs},
                                  dir);
    ASSERT_EQ(py.exit_code, 0) << py.err;
    const auto got = testing::ReadParams(dir / ours), want = testing::ReadParams(dir / theirs);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(want.size(), 6u * 16 + 16 + 16 + 16 + 16 * 3 + 3);
    const double error = testing::RelativeError(got, want);
    std::printf("%s: max |ladder - pytorch| / max |pytorch| = %.3g\n", c.optimizer.c_str(), error);
    EXPECT_LE(error, 1e-5);
  }
}

// bf16 autocast on a Conv3d-BatchNorm3d model: LibTorch 1.13's optimized TorchScript graphs fail its backward pass
// on bf16 (Python's PyTorch too); ladder-train runs the module unoptimized under autocast.
TEST(TorchScriptVsPyTorch, Bf16AutocastTrainsAVolumeModelWithBatchNorm) {
  if (!PythonTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (apt install python3-torch)";
  testing::TempDir dir("ts-bf16");
  PrepareReference(dir, 0);
  auto r = RunTrainer({"--data", "data.csv", "--input-shape", "1,1,2,3", "--model", "torchscript:volume.pt",
                       "--precision", "bf16", "--device", "cpu", "--batch-size", "16", "--epochs", "2", "--comm",
                       "none"},
                      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"val_loss\""), std::string::npos) << r.out;
}

TEST(TorchScriptVsPyTorch, TwoGlooRanksEndWithIdenticalParameters) {
  if (!PythonTorch()) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (apt install python3-torch)";
  testing::TempDir dir("ts-gloo");
  PrepareReference(dir, 0);
  const std::string port = std::to_string(testing::FreePort());
  std::string script;
  for (int r = 0; r < 2; ++r) {
    script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
              " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" + testing::TrainerBinary() + "'";
    // Overlapped, in buckets of a few hundred bytes: several allreduces per step start during the backward pass.
    for (const char* a : {"--data", "data.csv", "--model", "torchscript:plain.pt", "--optimizer", "sgd", "--lr", "0.1",
                          "--batch-size", "8", "--epochs", "5", "--max-steps", "20", "--comm", "gloo", "--overlap",
                          "on", "--bucket-cap-mb", "0.0003", "--save-params", "p{rank}.bin"}) {
      script += std::string(" '") + a + "'";
    }
    script += " > rank" + std::to_string(r) + ".log 2>&1 & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  auto r = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  ASSERT_EQ(r.exit_code, 0) << ReadFile(dir / "rank0.log") << ReadFile(dir / "rank1.log");
  EXPECT_NE(ReadFile(dir / "rank0.log").find("2 rank(s) over gloo"), std::string::npos);
  const auto p0 = testing::ReadParams(dir / "p0.bin"), p1 = testing::ReadParams(dir / "p1.bin");
  ASSERT_EQ(p0.size(), 6u * 16 + 16 + 16 + 16 + 16 * 3 + 3);
  EXPECT_EQ(p0, p1);
}

}  // namespace
}  // namespace ladder
