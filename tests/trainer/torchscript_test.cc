// ladder-train --model torchscript:FILE (trainer/torchscript_model.h, trainer/torchscript_file.h): a file it
// cannot load is one line naming the file and the versions; the scripted module's own tensors are what the
// optimizer, the checkpoint and loss(x, y) work on; and a model scripted by Debian's python3-torch at test time
// trains to PyTorch's own loop's parameters (SGD and AdamW, 20 steps, 1 rank) and to identical parameters on both
// ranks of a Gloo run. The Python side is tests/trainer/torchscript_reference.py; without /usr/bin/python3's torch
// those tests skip.
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"
#include "trainer/args.h"
#include "trainer/csv_dataset.h"
#include "trainer/optim.h"
#include "trainer/sample_stream.h"
#include "trainer/task.h"
#include "trainer/torchscript_file.h"
#include "trainer/torchscript_model.h"

namespace ladder {
namespace {

using trainer::Dataset;
namespace fs = std::filesystem;

// x @ weight.T + bias, for [N, features] → [N, classes].
torch::jit::Module LinearModule(int64_t features, int64_t classes) {
  torch::manual_seed(1);
  torch::jit::Module m("Classifier");
  m.register_parameter("weight", (torch::randn({classes, features}) * 0.3).requires_grad_(), false);
  m.register_parameter("bias", torch::zeros({classes}).requires_grad_(), false);
  m.define(R"(
def forward(self, x):
    return torch.matmul(x, self.weight.t()) + self.bias
)");
  return m;
}

// The records of `src` in a new archive whose version record says `version`; records named in `drop` left out.
void Rewrite(const std::string& src, const std::string& dst, uint64_t version, const std::string& drop = "") {
  caffe2::serialize::PyTorchStreamReader reader(src);
  caffe2::serialize::PyTorchStreamWriter writer(dst);
  writer.setMinVersion(version);
  for (const auto& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version" || name == drop) continue;
    auto [data, size] = reader.getRecord(name);
    writer.writeRecord(name, data.get(), size);
  }
  writer.writeEndOfFile();
}

// `rows` samples of `features` Gaussian features, labels 0..classes-1, as CSV (features then label).
void WriteData(const fs::path& path, int rows, int features, int classes) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::ofstream out(path);
  for (int r = 0; r < rows; ++r) {
    for (int f = 0; f < features; ++f) out << normal(rng) + (f == r % classes ? 1.5f : 0.0f) << ",";
    out << r % classes << "\n";
  }
}

Dataset Meta(int64_t rows, int64_t features, int64_t classes) {
  Dataset d;
  d.rows = rows, d.features = features, d.classes = classes;
  for (int64_t i = 0; i < rows * features; ++i) d.x.push_back(static_cast<float>(i % 7) * 0.1f);
  for (int64_t i = 0; i < rows; ++i) d.y.push_back(i % classes);
  return d;
}

std::string RunTrain(std::vector<std::string> args, const fs::path& dir, int* code) {
  args.insert(args.begin(), testing::TrainerBinary());
  auto r = testing::RunCommand(args, dir);
  *code = r.exit_code;
  return r.err;
}

// The line of `text` that holds `needle` ("" when none does).
std::string LineWith(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

TEST(TorchScriptFile, ANewerFormatIsOneLineNamingTheFileAndBothVersions) {
  testing::TempDir dir("ts-version");
  const std::string good = (dir / "model.pt").string(), newer = (dir / "newer.pt").string();
  LinearModule(4, 3).save(good);
  const int64_t ours = trainer::TorchScriptFileVersion(good);
  EXPECT_GE(ours, 1);
  EXPECT_LE(ours, trainer::MaxReadableTorchScriptVersion());
  Rewrite(good, newer, 99);
  ASSERT_EQ(trainer::TorchScriptFileVersion(newer), 99);

  torch::jit::Module m;
  std::string error;
  EXPECT_FALSE(trainer::LoadTorchScript(newer, &m, &error));
  EXPECT_NE(error.find("torchscript:" + newer + ": written by a newer PyTorch"), std::string::npos) << error;
  EXPECT_NE(error.find("format version 99"), std::string::npos) << error;
  EXPECT_NE(error.find("LibTorch " + trainer::LibTorchVersion() + " (reads TorchScript file format versions 1 to " +
                       std::to_string(trainer::MaxReadableTorchScriptVersion()) + ")"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  // ladder-train says it in one line and exits 2 (bad arguments), no abort.
  WriteData(dir / "data.csv", 30, 4, 3);
  int code = 0;
  const auto err = RunTrain({"--data", "data.csv", "--model", "torchscript:" + newer, "--epochs", "1"}, dir, &code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(LineWith(err, "torchscript:").find("format version 99"), std::string::npos) << err;
  EXPECT_EQ(err.find("terminate"), std::string::npos) << err;
}

TEST(TorchScriptFile, AMissingFileOrNotTorchScriptIsOneLine) {
  testing::TempDir dir("ts-notscript");
  torch::jit::Module m;
  std::string error;
  EXPECT_FALSE(trainer::LoadTorchScript((dir / "absent.pt").string(), &m, &error));
  EXPECT_NE(error.find("absent.pt: cannot read it: No such file"), std::string::npos) << error;

  std::ofstream(dir / "text.pt") << "a,b\n1,2\n";
  EXPECT_FALSE(trainer::LoadTorchScript((dir / "text.pt").string(), &m, &error));
  EXPECT_NE(error.find("text.pt: not a TorchScript file"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  // A readable version but no program in it.
  const std::string good = (dir / "model.pt").string(), broken = (dir / "broken.pt").string();
  LinearModule(4, 3).save(good);
  Rewrite(good, broken, 3, "data.pkl");
  EXPECT_FALSE(trainer::LoadTorchScript(broken, &m, &error));
  EXPECT_NE(error.find("broken.pt: cannot be loaded by LibTorch " + trainer::LibTorchVersion()), std::string::npos)
      << error;
  EXPECT_NE(error.find("format version 3"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;

  WriteData(dir / "data.csv", 30, 4, 3);
  int code = 0;
  const auto err = RunTrain({"--data", "data.csv", "--model", "torchscript:absent.pt"}, dir, &code);
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("--model torchscript:absent.pt: cannot read it"), std::string::npos) << err;
}

TEST(TorchScriptModel, ModelTakesTorchScriptAndAFileName) {
  EXPECT_EQ(trainer::ParseArgs({"--model", "torchscript:dir/m.pt"}).args.model, "torchscript:dir/m.pt");
  EXPECT_NE(trainer::ParseArgs({"--model", "torchscript:"}).error.find("expected torchscript:FILE"), std::string::npos);
  EXPECT_NE(trainer::ParseArgs({"--model", "resnet"}).error.find("transformer or torchscript:FILE"), std::string::npos)
      << trainer::ParseArgs({"--model", "resnet"}).error;
}

TEST(TorchScriptModel, AForwardOfTheWrongShapeIsRefusedAtTheStart) {
  testing::TempDir dir("ts-shape");
  const std::string path = (dir / "five.pt").string();
  LinearModule(4, 5).save(path);
  trainer::ModelOptions o;
  o.name = "torchscript:" + path;
  std::string error;
  EXPECT_EQ(trainer::MakeNetwork(o, Meta(6, 4, 3), &error), nullptr);
  EXPECT_NE(error.find("returned shape [2, 5]; task classify with 3 classes expects [2, 3]"), std::string::npos)
      << error;
  EXPECT_NE(trainer::MakeNetwork(o, Meta(6, 4, 5), &error), nullptr) << error;
  // Not a tensor.
  torch::jit::Module pair("Pair");
  pair.register_parameter("weight", torch::ones({3, 4}).requires_grad_(), false);
  pair.define(R"(
def forward(self, x):
    return torch.matmul(x, self.weight.t()), x
)");
  pair.save((dir / "pair.pt").string());
  o.name = "torchscript:" + (dir / "pair.pt").string();
  EXPECT_EQ(trainer::MakeNetwork(o, Meta(6, 4, 3), &error), nullptr);
  EXPECT_NE(error.find("forward(x) returned a Tuple[Tensor, Tensor], not a tensor"), std::string::npos) << error;
  o.name = "torchscript:" + path;
  // An error inside the TorchScript interpreter: its last line says what failed.
  EXPECT_EQ(trainer::MakeNetwork(o, Meta(6, 3, 5), &error), nullptr);
  EXPECT_NE(
      error.find("forward(x) on x of shape [2, 3] failed: RuntimeError: mat1 and mat2 shapes cannot be multiplied"),
      std::string::npos)
      << error;
}

// An error raised by the module as it trains (here: on batches larger than the two samples it was checked on) ends
// the run (exit 1) with what failed as the last stderr line, not LibTorch's C++ frames.
TEST(TorchScriptModel, AnErrorInsideTheModuleEndsTheRunWithWhatFailedLast) {
  testing::TempDir dir("ts-raise");
  auto m = LinearModule(4, 3);
  m.define(R"(
def loss(self, x, y):
    if x.size(0) > 2:
        return torch.mean(torch.matmul(x, self.weight))
    return torch.mean(torch.matmul(x, self.weight.t()))
)");
  m.save((dir / "model.pt").string());
  WriteData(dir / "data.csv", 30, 4, 3);
  int code = 0;
  auto err = RunTrain({"--data", "data.csv", "--model", "torchscript:model.pt", "--batch-size", "8"}, dir, &code);
  EXPECT_EQ(code, 1) << err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  const std::string last = err.substr(err.rfind('\n') + 1);
  EXPECT_NE(last.find("mat1 and mat2 shapes cannot be multiplied (8x4 and 3x4)"), std::string::npos) << err;
  EXPECT_NE(err.find("the TorchScript model's loss(x, y) failed"), std::string::npos) << err;
  EXPECT_EQ(err.find("frame #"), std::string::npos) << err;
}

// The optimizer steps the scripted module's own tensors, and the 2-D bias and the norm module's weight get no
// weight decay.
TEST(TorchScriptModel, BiasesAndNormParametersFoundByNameAndShapeGetNoWeightDecay) {
  torch::jit::Module norm("MyGroupNorm");
  norm.register_parameter("weight", torch::ones({1, 3}).requires_grad_(), false);
  torch::jit::Module m("Net");
  m.register_parameter("weight", torch::ones({3, 4}).requires_grad_(), false);
  m.register_parameter("shift_bias", torch::ones({1, 3}).requires_grad_(), false);
  m.register_parameter("scale", torch::ones({3}).requires_grad_(), false);
  m.register_parameter("frozen", torch::ones({3, 3}), false);  // no gradient: kept as a buffer
  m.register_module("norm", norm);
  m.define(R"(
def forward(self, x):
    return (torch.matmul(x, self.weight.t()) + self.shift_bias) * self.scale * self.norm.weight
)");
  trainer::TorchScriptNetwork net(m, /*flatten_labels=*/true);
  EXPECT_EQ(net.parameter_names(), (std::vector<std::string>{"weight", "shift_bias", "scale", "norm.weight"}));
  EXPECT_EQ(net.NoWeightDecay(), (std::vector<bool>{false, true, true, true}));
  auto params = net.parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].data_ptr(), m.attr("weight").toTensor().data_ptr());
  EXPECT_EQ(net.buffers().size(), 1u);

  trainer::OptimizerOptions o;
  o.momentum = 0;
  o.weight_decay = 0.5;
  o.no_decay = net.NoWeightDecay();
  std::string error;
  auto opt = trainer::MakeOptimizer(o, params, &error);
  for (auto& p : params) p.mutable_grad() = torch::zeros_like(p);
  opt->Step(0.1);
  EXPECT_TRUE(m.attr("weight").toTensor().allclose(torch::full({3, 4}, 0.95)));
  EXPECT_TRUE(m.attr("shift_bias").toTensor().equal(torch::ones({1, 3})));
  EXPECT_TRUE(m.attr("scale").toTensor().equal(torch::ones({3})));
  EXPECT_TRUE(norm.attr("weight").toTensor().equal(torch::ones({1, 3})));
}

TEST(TorchScriptModel, ItsOwnLossIsWhatTrainingAndValidationUse) {
  auto m = LinearModule(4, 3);
  // y arrives as [N] for one label per sample: dim() is 1.
  m.define(R"(
def loss(self, x, y):
    return torch.mean(torch.matmul(x, self.weight.t())) * 0.0 + float(y.dim()) + 10.0
)");
  trainer::TorchScriptNetwork net(m, /*flatten_labels=*/true);
  ASSERT_TRUE(net.HasOwnLoss());
  const auto x = torch::ones({6, 4}), y = torch::zeros({6, 1}, torch::kInt64);
  trainer::LossSpec spec;
  EXPECT_DOUBLE_EQ(trainer::NetworkLoss(net, x, y, spec).item<double>(), 11.0);
  const auto eval = trainer::Evaluate(net, x, y, spec, 3, trainer::EvalOptions{});
  EXPECT_DOUBLE_EQ(eval.at("loss"), 11.0);
  trainer::TorchScriptNetwork plain(LinearModule(4, 3), true);
  EXPECT_FALSE(plain.HasOwnLoss());
  EXPECT_LT(trainer::NetworkLoss(plain, x, y, spec).item<double>(), 5.0);
}

}  // namespace
}  // namespace ladder
