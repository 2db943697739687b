// The trainer's workloads: networks (models.h), tasks (task.h), the batch prefetcher, and short real training
// runs of each model on its data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "trainer/batch_prefetcher.h"
#include "trainer/data_sources.h"
#include "trainer/models.h"
#include "trainer/task.h"
#include "trainer/train_loop.h"

namespace ladder::trainer {
namespace {

Dataset Meta(Task task, std::vector<int64_t> shape, int64_t classes) {
  Dataset d;
  d.task = task;
  d.shape = shape;
  d.features = 1;
  for (int64_t s : shape) d.features *= s;
  d.classes = classes;
  return d;
}

TEST(Models, OutputShapes) {
  std::string err;
  ModelOptions o;
  o.width = 8;
  o.depth = 2;
  o.name = "mlp";
  auto mlp = MakeNetwork(o, Meta(Task::kClassify, {64}, 10), &err);
  ASSERT_TRUE(mlp) << err;
  EXPECT_EQ(mlp->forward(torch::randn({4, 64})).sizes(), (std::vector<int64_t>{4, 10}));
  o.name = "cnn";
  auto cnn = MakeNetwork(o, Meta(Task::kClassify, {1, 8, 8}, 10), &err);
  ASSERT_TRUE(cnn) << err;
  EXPECT_EQ(cnn->forward(torch::randn({4, 1, 8, 8})).sizes(), (std::vector<int64_t>{4, 10}));
  o.name = "unet";
  auto unet = MakeNetwork(o, Meta(Task::kSegment, {16, 16, 12}, 3), &err);
  ASSERT_TRUE(unet) << err;
  EXPECT_EQ(unet->forward(torch::randn({2, 16, 16, 12})).sizes(), (std::vector<int64_t>{2, 3, 16, 12}));
  o.name = "transformer";
  o.heads = 2;
  auto lm = MakeNetwork(o, Meta(Task::kLanguageModel, {12}, 20), &err);
  ASSERT_TRUE(lm) << err;
  EXPECT_EQ(lm->forward(torch::randint(0, 20, {2, 12}).to(torch::kFloat32)).sizes(),
            (std::vector<int64_t>{2, 12, 20}));
}

TEST(Models, TransformerIsCausal) {
  std::string err;
  ModelOptions o;
  o.name = "transformer";
  o.width = 16;
  o.heads = 2;
  auto lm = MakeNetwork(o, Meta(Task::kLanguageModel, {10}, 20), &err);
  ASSERT_TRUE(lm) << err;
  lm->eval();
  auto a = torch::randint(0, 20, {1, 10}).to(torch::kFloat32), b = a.clone();
  b[0][7] = std::fmod(b[0][7].item<float>() + 1, 20);
  auto la = lm->forward(a), lb = lm->forward(b);
  // Positions before 7 cannot see the change; position 7 and later do.
  EXPECT_TRUE(torch::allclose(la.narrow(1, 0, 7), lb.narrow(1, 0, 7)));
  EXPECT_FALSE(torch::allclose(la.narrow(1, 7, 3), lb.narrow(1, 7, 3)));
}

TEST(Models, ErrorsNameTheOptionAndTheMismatch) {
  std::string err;
  ModelOptions o;
  o.name = "cnn";
  EXPECT_FALSE(MakeNetwork(o, Meta(Task::kClassify, {64}, 10), &err));
  EXPECT_NE(err.find("--input-shape 1,8,8"), std::string::npos) << err;
  o.name = "transformer";
  EXPECT_FALSE(MakeNetwork(o, Meta(Task::kClassify, {64}, 10), &err));
  EXPECT_NE(err.find("--model transformer is for token-sequence"), std::string::npos) << err;
  o.name = "unet";
  EXPECT_FALSE(MakeNetwork(o, Meta(Task::kSegment, {16, 30, 30}, 3), &err));
  EXPECT_NE(err.find("divisible by 4"), std::string::npos) << err;
  o.name = "transformer";
  o.width = 10;
  o.heads = 4;
  EXPECT_FALSE(MakeNetwork(o, Meta(Task::kLanguageModel, {8}, 5), &err));
  EXPECT_NE(err.find("--width 10 is not divisible by --heads 4"), std::string::npos) << err;
  EXPECT_EQ(DefaultModelFor(Meta(Task::kSegment, {16, 8, 8}, 3)), "unet");
  EXPECT_EQ(DefaultModelFor(Meta(Task::kLanguageModel, {8}, 3)), "transformer");
}

TEST(Task, AutoClassWeightsFavourRareClassesAndAverageToOne) {
  Dataset d = Meta(Task::kSegment, {1, 2, 2}, 3);
  d.rows = 4;
  d.label_size = 4;
  // 12 background, 3 class-1, 1 class-2 pixels.
  d.y = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2};
  torch::Tensor w;
  std::string err;
  ASSERT_TRUE(ClassWeights("auto", d, &w, &err)) << err;
  EXPECT_GT(w[2].item<float>(), w[1].item<float>());
  EXPECT_GT(w[1].item<float>(), w[0].item<float>());
  EXPECT_NEAR((w[0] * 12 + w[1] * 3 + w[2]).item<float>() / 16, 1.0, 1e-5);
  EXPECT_NEAR(w[2].item<float>() / w[0].item<float>(), std::sqrt(12.0), 1e-4);
  ASSERT_TRUE(ClassWeights("1,2,3", d, &w, &err));
  EXPECT_EQ(w[2].item<float>(), 3.0f);
  EXPECT_FALSE(ClassWeights("1,2", d, &w, &err));
  EXPECT_NE(err.find("has 2 weights, the data has 3 classes"), std::string::npos) << err;
}

TEST(Task, WeightedSegmentationLossIsNormalizedByPixelsNotWeights) {
  torch::manual_seed(3);
  auto logits = torch::randn({2, 3, 2, 2});
  auto labels = torch::randint(0, 3, {2, 4});
  LossSpec spec;
  spec.task = Task::kSegment;
  spec.class_weights = torch::tensor({1.0f, 2.0f, 5.0f});
  auto lsm = torch::log_softmax(logits, 1);
  double want = 0;
  auto y = labels.reshape({2, 2, 2});
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        auto c = y[n][i][j].item<int64_t>();
        want -= spec.class_weights[c].item<float>() * lsm[n][c][i][j].item<float>();
      }
    }
  }
  EXPECT_NEAR(TaskLoss(logits, labels, spec).item<double>(), want / 8, 1e-5);
  // Split in two halves, the mean of the halves' losses is the whole batch's loss (data parallelism is exact).
  auto half = (TaskLoss(logits.narrow(0, 0, 1), labels.narrow(0, 0, 1), spec) +
               TaskLoss(logits.narrow(0, 1, 1), labels.narrow(0, 1, 1), spec)) / 2;
  EXPECT_NEAR(half.item<double>(), want / 8, 1e-5);
}

// Returns its input as logits: a "perfect" segmenter when the input is the one-hot truth.
class Identity final : public Network {
 public:
  torch::Tensor forward(torch::Tensor x) override { return x; }
};

TEST(Task, EvaluateReportsPixelAccuracyAndMeanIoU) {
  auto labels = torch::randint(0, 3, {5, 16});
  auto onehot = torch::one_hot(labels.reshape({5, 4, 4}), 3).permute({0, 3, 1, 2}).to(torch::kFloat32) * 20;
  Identity net;
  LossSpec spec;
  spec.task = Task::kSegment;
  auto m = Evaluate(net, onehot, labels, spec, 3, EvalOptions{});
  EXPECT_DOUBLE_EQ(m["accuracy"], 1.0);
  EXPECT_DOUBLE_EQ(m["miou"], 1.0);
  EXPECT_LT(m["loss"], 1e-6);
  // Predict everything as class 0: IoU of class 0 = its share, classes 1 and 2 get 0.
  auto zeros = torch::zeros_like(onehot);
  zeros.select(1, 0).fill_(1);
  auto z = Evaluate(net, zeros, labels, spec, 3, EvalOptions{});
  const double share0 = labels.eq(0).sum().item<double>() / 80.0;
  EXPECT_NEAR(z["accuracy"], share0, 1e-12);
  EXPECT_NEAR(z["miou"], share0 / 3, 1e-12);
}

TEST(BatchPrefetcher, TheBackgroundThreadGivesExactlyTheSynchronousBatches) {
  auto x = torch::arange(100).to(torch::kFloat32).reshape({100, 1});
  auto y = torch::arange(100).reshape({100, 1});
  auto global_at = [](int64_t s) { return GlobalBatchAt(8, {{5, 2}}, s); };  // 8, then 16 from step 5
  for (int rank : {0, 1}) {
    PrefetchOptions sync;
    sync.depth = 0;
    sync.rank = rank;
    sync.world = 2;
    sync.epochs = 3;
    PrefetchOptions async = sync;
    async.depth = 3;
    BatchPrefetcher a(x, y, SampleStream(100, 7), 0, global_at, sync), b(x, y, SampleStream(100, 7), 0, global_at, async);
    int batches = 0;
    for (;;) {
      auto ba = a.Next(), bb = b.Next();
      ASSERT_EQ(ba.has_value(), bb.has_value());
      if (!ba) break;
      ++batches;
      EXPECT_EQ(ba->step, bb->step);
      EXPECT_EQ(ba->global, global_at(ba->step));
      EXPECT_EQ(ba->x.size(0), ba->global / 2);
      EXPECT_TRUE(torch::equal(ba->x, bb->x));
      EXPECT_TRUE(torch::equal(ba->y, bb->y));
      EXPECT_EQ(ba->epoch_after, bb->epoch_after);
      EXPECT_EQ(ba->offset_after, bb->offset_after);
      EXPECT_EQ(ba->last, bb->last);
    }
    // 300 samples: 5 steps of 8, then steps of 16 while 16 remain: (300 - 40) / 16 = 16.
    EXPECT_EQ(batches, 21);
  }
  // Rank 0 and rank 1 take disjoint halves of the same global batch.
  PrefetchOptions r0, r1;
  r0.world = r1.world = 2;
  r1.rank = 1;
  BatchPrefetcher a(x, y, SampleStream(100, 7), 0, global_at, r0), b(x, y, SampleStream(100, 7), 0, global_at, r1);
  PrefetchOptions whole;
  BatchPrefetcher w(x, y, SampleStream(100, 7), 0, global_at, whole);
  auto ba = a.Next(), bb = b.Next(), bw = w.Next();
  auto both = torch::cat({ba->y, bb->y}).reshape({-1});
  EXPECT_TRUE(torch::equal(std::get<0>(both.sort()), std::get<0>(bw->y.reshape({-1}).sort())));
}

// Short real training runs: every model learns its task well beyond chance.
struct RunOut {
  TrainResult result;
  std::string metrics;
};

RunOut TrainOn(const TrainArgs& a, Dataset all) {
  Dataset train, val;
  SplitDataset(all, 0.2, 5, &train, &val);
  Standardize(&train, &val);
  std::FILE* f = std::tmpfile();
  MetricsWriter w(f);
  auto comm = comm::MakeSingleProcess();
  RunOut out;
  out.result = Train(a, train, val, w, *comm);
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.metrics.append(buf, n);
  std::fclose(f);
  return out;
}

TEST(Workloads, UNetSegmentsClimateFields) {
  TrainArgs a;
  a.model = "unet";
  a.width = 8;
  a.depth = 1;
  a.optimizer = "adam";
  a.lr = 0.01;
  a.batch_size = 8;
  a.epochs = 4;
  auto out = TrainOn(a, MakeClimate(160, 16, 11));
  ASSERT_EQ(out.result.exit_code, 0);
  EXPECT_NE(out.metrics.find("\"val_miou\""), std::string::npos) << out.metrics;
  // Background is ~80% of the pixels; the class-weighted net must find events, so mIoU well above the 0.27
  // of "all background".
  EXPECT_GT(out.result.final_val_accuracy, 0.8);
  const auto p = out.metrics.rfind("\"val_miou\": ");
  ASSERT_NE(p, std::string::npos);
  EXPECT_GT(std::stod(out.metrics.substr(p + 12)), 0.45) << out.metrics;
}

TEST(Workloads, TransformerLearnsTheMarkovChain) {
  TrainArgs a;
  a.model = "transformer";
  a.width = 32;
  a.depth = 1;
  a.heads = 2;
  a.optimizer = "adamw";
  a.lr = 0.01;
  a.batch_size = 16;
  a.epochs = 8;
  auto out = TrainOn(a, MakeMarkovText(400, 16, 8, 3));
  ASSERT_EQ(out.result.exit_code, 0);
  EXPECT_NE(out.metrics.find("\"val_perplexity\""), std::string::npos) << out.metrics;
  // Uniform guessing costs log(8) = 2.08 nats per token; the chain's entropy is much lower.
  EXPECT_LT(out.result.final_val_loss, 1.6);
}

TEST(Workloads, ResNetClassifiesImagesAndBf16AutocastTrainsToo) {
  // 8×8 "images": class = which quadrant holds a bright blob.
  Dataset d = Meta(Task::kClassify, {1, 8, 8}, 4);
  torch::manual_seed(4);
  d.rows = 400;
  auto x = torch::randn({400, 1, 8, 8}) * 0.5;
  for (int i = 0; i < 400; ++i) {
    const int c = i % 4;
    x[i][0].narrow(0, (c / 2) * 4, 4).narrow(1, (c % 2) * 4, 4).add_(1.5);
    d.y.push_back(c);
  }
  auto xc = x.contiguous();
  d.x.assign(xc.data_ptr<float>(), xc.data_ptr<float>() + xc.numel());
  for (const char* precision : {"fp32", "bf16"}) {
    TrainArgs a;
    a.model = "cnn";
    a.width = 8;
    a.depth = 2;
    a.optimizer = "adam";
    a.lr = 0.01;
    a.batch_size = 16;
    a.epochs = 3;
    a.precision = precision;
    auto out = TrainOn(a, d);
    ASSERT_EQ(out.result.exit_code, 0) << precision;
    EXPECT_GT(out.result.final_val_accuracy, 0.9) << precision;
  }
}

}  // namespace
}  // namespace ladder::trainer
