#include "trainer/models.h"

#include <cmath>
#include <numeric>

#include "trainer/resnet3d.h"
#include "trainer/torchscript_model.h"

namespace ladder::trainer {

namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

// Normalization always runs in float32 (as CUDA autocast does; LibTorch 1.13's CPU autocast would hand
// GroupNorm bf16 inputs with float32 weights and fail).
class GroupNorm32Impl : public torch::nn::Module {
 public:
  GroupNorm32Impl(int64_t groups, int64_t channels)
      : gn_(register_module("gn", nn::GroupNorm(nn::GroupNormOptions(groups, channels)))) {}
  torch::Tensor forward(const torch::Tensor& x) { return gn_(x.to(torch::kFloat32)); }

 private:
  nn::GroupNorm gn_;
};
TORCH_MODULE(GroupNorm32);

class LayerNorm32Impl : public torch::nn::Module {
 public:
  explicit LayerNorm32Impl(int64_t d) : ln_(register_module("ln", nn::LayerNorm(nn::LayerNormOptions({d})))) {}
  torch::Tensor forward(const torch::Tensor& x) { return ln_(x.to(torch::kFloat32)); }

 private:
  nn::LayerNorm ln_;
};
TORCH_MODULE(LayerNorm32);

// GroupNorm over `channels` with up to 8 groups (the largest count ≤ 8 that divides it).
GroupNorm32 Norm(int64_t channels) {
  int64_t g = std::min<int64_t>(8, channels);
  while (channels % g != 0) --g;
  return GroupNorm32(g, channels);
}

nn::Conv2d Conv3(int64_t in, int64_t out, int64_t stride = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

class Mlp final : public Network {
 public:
  Mlp(int64_t in, int64_t classes, const ModelOptions& o) {
    int64_t width = in;
    for (int i = 0; i < o.depth; ++i) {
      seq_->push_back(nn::Linear(width, o.width));
      seq_->push_back(nn::ReLU());
      if (o.dropout > 0) seq_->push_back(nn::Dropout(o.dropout));
      width = o.width;
    }
    seq_->push_back(nn::Linear(width, classes));
    register_module("seq", seq_);
  }
  torch::Tensor forward(torch::Tensor x) override { return seq_->forward(x.flatten(1)); }

 private:
  nn::Sequential seq_;
};

// conv-norm-relu-conv-norm plus a (projected) shortcut, then relu.
class BasicBlock final : public torch::nn::Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride)
      : c1_(register_module("c1", Conv3(in, out, stride))),
        n1_(register_module("n1", Norm(out))),
        c2_(register_module("c2", Conv3(out, out))),
        n2_(register_module("n2", Norm(out))) {
    if (stride != 1 || in != out) {
      proj_ = register_module("proj", nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      pn_ = register_module("pn", Norm(out));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::relu(n1_(c1_(x)));
    h = n2_(c2_(h));
    return torch::relu(h + (proj_ ? pn_(proj_(x)) : x));
  }

 private:
  nn::Conv2d c1_;
  GroupNorm32 n1_;
  nn::Conv2d c2_;
  GroupNorm32 n2_;
  nn::Conv2d proj_{nullptr};
  GroupNorm32 pn_{nullptr};
};

class ResNet final : public Network {
 public:
  ResNet(int64_t channels, int64_t classes, const ModelOptions& o)
      : stem_(register_module("stem", Conv3(channels, o.width))), stem_norm_(register_module("stem_norm", Norm(o.width))) {
    int64_t in = o.width;
    for (int s = 0; s < o.depth; ++s) {
      const int64_t out = static_cast<int64_t>(o.width) << s;
      blocks_.push_back(register_module("b" + std::to_string(s) + "a", std::make_shared<BasicBlock>(in, out, s ? 2 : 1)));
      blocks_.push_back(register_module("b" + std::to_string(s) + "b", std::make_shared<BasicBlock>(out, out, 1)));
      in = out;
    }
    head_ = register_module("head", nn::Linear(in, classes));
    dropout_ = o.dropout;
  }
  torch::Tensor forward(torch::Tensor x) override {
    auto h = torch::relu(stem_norm_(stem_(x)));
    for (auto& b : blocks_) h = b->forward(h);
    h = h.mean({2, 3});
    if (dropout_ > 0) h = F::dropout(h, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    return head_(h);
  }

 private:
  nn::Conv2d stem_;
  GroupNorm32 stem_norm_;
  std::vector<std::shared_ptr<BasicBlock>> blocks_;
  nn::Linear head_{nullptr};
  double dropout_ = 0;
};

// [conv3×3-norm-relu] × n
nn::Sequential ConvStack(int64_t in, int64_t out, int n) {
  nn::Sequential s;
  for (int i = 0; i < n; ++i) {
    s->push_back(Conv3(i ? out : in, out));
    s->push_back(Norm(out));
    s->push_back(nn::ReLU());
  }
  return s;
}

class UNet final : public Network {
 public:
  UNet(int64_t channels, int64_t classes, const ModelOptions& o) {
    const int64_t w = o.width;
    const int n = std::max(1, o.depth);
    enc0_ = register_module("enc0", ConvStack(channels, w, n));
    enc1_ = register_module("enc1", ConvStack(w, 2 * w, n));
    mid_ = register_module("mid", ConvStack(2 * w, 4 * w, n));
    up1_ = register_module("up1", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4 * w, 2 * w, 2).stride(2)));
    dec1_ = register_module("dec1", ConvStack(4 * w, 2 * w, n));
    up0_ = register_module("up0", nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2 * w, w, 2).stride(2)));
    dec0_ = register_module("dec0", ConvStack(2 * w, w, n));
    head_ = register_module("head", nn::Conv2d(nn::Conv2dOptions(w, classes, 1)));
  }
  torch::Tensor forward(torch::Tensor x) override {
    auto e0 = enc0_->forward(x);
    auto e1 = enc1_->forward(F::max_pool2d(e0, F::MaxPool2dFuncOptions(2)));
    auto m = mid_->forward(F::max_pool2d(e1, F::MaxPool2dFuncOptions(2)));
    auto d1 = dec1_->forward(torch::cat({up1_(m), e1}, 1));
    auto d0 = dec0_->forward(torch::cat({up0_(d1), e0}, 1));
    return head_(d0);
  }

 private:
  nn::Sequential enc0_{nullptr}, enc1_{nullptr}, mid_{nullptr}, dec1_{nullptr}, dec0_{nullptr};
  nn::ConvTranspose2d up1_{nullptr}, up0_{nullptr};
  nn::Conv2d head_{nullptr};
};

// Pre-norm transformer block with causal multi-head self-attention.
class Block final : public torch::nn::Module {
 public:
  Block(int64_t d, int64_t heads, double dropout)
      : ln1_(register_module("ln1", LayerNorm32(d))),
        qkv_(register_module("qkv", nn::Linear(d, 3 * d))),
        proj_(register_module("proj", nn::Linear(d, d))),
        ln2_(register_module("ln2", LayerNorm32(d))),
        fc1_(register_module("fc1", nn::Linear(d, 4 * d))),
        fc2_(register_module("fc2", nn::Linear(4 * d, d))),
        heads_(heads),
        dropout_(dropout) {}
  // x: [N, T, D]; mask: [T, T], true above the diagonal (future positions).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const int64_t n = x.size(0), t = x.size(1), d = x.size(2), hd = d / heads_;
    auto qkv = qkv_(ln1_(x)).view({n, t, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];  // [N, H, T, hd]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    att = torch::softmax(att.masked_fill(mask, -std::numeric_limits<double>::infinity()), -1);
    if (dropout_ > 0) att = F::dropout(att, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({n, t, d});
    auto h = x + proj_(y);
    return h + fc2_(F::gelu(fc1_(ln2_(h))));
  }

 private:
  LayerNorm32 ln1_;
  nn::Linear qkv_, proj_;
  LayerNorm32 ln2_;
  nn::Linear fc1_, fc2_;
  int64_t heads_;
  double dropout_;
};

class Transformer final : public Network {
 public:
  Transformer(int64_t vocab, int64_t max_len, const ModelOptions& o) {
    const int64_t d = o.width;
    tok_ = register_module("tok", nn::Embedding(vocab, d));
    pos_ = register_parameter("pos", torch::randn({max_len, d}) * 0.02);
    {
      torch::NoGradGuard no_grad;
      tok_->weight.normal_(0, 0.02);
    }
    for (int i = 0; i < o.depth; ++i) {
      blocks_.push_back(register_module("block" + std::to_string(i), std::make_shared<Block>(d, o.heads, o.dropout)));
    }
    lnf_ = register_module("lnf", LayerNorm32(d));
  }
  torch::Tensor forward(torch::Tensor x) override {
    auto ids = x.to(torch::kLong);
    const int64_t t = ids.size(1);
    auto h = tok_(ids) + pos_.narrow(0, 0, t);
    auto mask = torch::ones({t, t}, torch::TensorOptions().dtype(torch::kBool).device(ids.device())).triu(1);
    for (auto& b : blocks_) h = b->forward(h, mask);
    // Output head tied to the token embedding.
    return torch::matmul(lnf_(h), tok_->weight.t());
  }

 private:
  nn::Embedding tok_{nullptr};
  torch::Tensor pos_;
  std::vector<std::shared_ptr<Block>> blocks_;
  LayerNorm32 lnf_{nullptr};
};

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

std::string DefaultModelFor(const Dataset& meta) {
  switch (meta.task) {
    case Task::kSegment: return "unet";
    case Task::kLanguageModel: return "transformer";
    case Task::kRegress: return meta.SampleShape().size() == 4 ? "cnn" : "mlp";  // volumes (cosmo:): the 3D cnn
    case Task::kClassify: break;
  }
  return "mlp";
}

std::shared_ptr<Network> MakeNetwork(const ModelOptions& o, const Dataset& meta, std::string* error) {
  if (o.name.rfind(kTorchScriptModelPrefix, 0) == 0) {
    return MakeTorchScriptNetwork(o.name.substr(std::string(kTorchScriptModelPrefix).size()), meta, error);
  }
  const auto shape = meta.SampleShape();
  const std::string data = "this data has shape " + ShapeText(shape);
  auto want_task = [&](Task t, const char* what) {
    if (meta.task == t || (t == Task::kClassify && meta.task == Task::kRegress)) return true;  // outputs: classes
    *error = "--model " + o.name + " is for " + what + " data; " + data + " and task " + TaskName(meta.task) +
             " (models: mlp, cnn for classification and regression; unet for segmentation; transformer for token "
             "sequences)";
    return false;
  };
  if (o.name == "mlp") {
    if (!want_task(Task::kClassify, "classification or regression")) return nullptr;
    return std::make_shared<Mlp>(meta.features, meta.classes, o);
  }
  if (o.name == "cnn" && shape.size() == 4 && want_task(Task::kClassify, "classification or regression")) {
    return MakeResNet3d(shape[0], meta.classes, o);  // volumes (C,D,H,W)
  }
  if (o.name == "cnn" || o.name == "unet") {
    if (!want_task(o.name == "cnn" ? Task::kClassify : Task::kSegment,
                   o.name == "cnn" ? "classification or regression" : "segmentation")) {
      return nullptr;
    }
    if (shape.size() != 3) {
      *error = "--model " + o.name + " needs image-shaped samples (C,H,W)" +
               (o.name == "cnn" ? " or volumes (C,D,H,W)" : "") + "; " + data +
               (meta.features == 64 ? ": use --input-shape 1,8,8" : ": use --input-shape C,H,W");
      return nullptr;
    }
    if (o.name == "cnn") return std::make_shared<ResNet>(shape[0], meta.classes, o);
    if (shape[1] % 4 != 0 || shape[2] % 4 != 0) {
      *error = "--model unet needs height and width divisible by 4; " + data;
      return nullptr;
    }
    return std::make_shared<UNet>(shape[0], meta.classes, o);
  }
  if (o.name == "transformer") {
    if (!want_task(Task::kLanguageModel, "token-sequence (language model)")) return nullptr;
    if (o.heads < 1 || o.width % o.heads != 0) {
      *error = "--width " + std::to_string(o.width) + " is not divisible by --heads " + std::to_string(o.heads);
      return nullptr;
    }
    return std::make_shared<Transformer>(meta.classes, shape.at(0), o);
  }
  *error = "unknown --model '" + o.name + "' (mlp, cnn, unet, transformer, torchscript:FILE)";
  return nullptr;
}

}  // namespace ladder::trainer
