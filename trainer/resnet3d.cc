#include "trainer/resnet3d.h"

#include <string>
#include <vector>

namespace ladder::trainer {

namespace {

namespace nn = torch::nn;
namespace F = torch::nn::functional;

nn::Conv3d Conv3x3x3(int64_t in, int64_t out, int64_t stride = 1) {
  return nn::Conv3d(nn::Conv3dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

// conv-relu-conv plus a (projected) shortcut, then relu.
class BasicBlock3d final : public torch::nn::Module {
 public:
  BasicBlock3d(int64_t in, int64_t out, int64_t stride)
      : c1_(register_module("c1", Conv3x3x3(in, out, stride))), c2_(register_module("c2", Conv3x3x3(out, out))) {
    if (stride != 1 || in != out) {
      proj_ = register_module("proj", nn::Conv3d(nn::Conv3dOptions(in, out, 1).stride(stride).bias(false)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = c2_(torch::relu(c1_(x)));
    return torch::relu(h + (proj_ ? proj_(x) : x));
  }

 private:
  nn::Conv3d c1_, c2_;
  nn::Conv3d proj_{nullptr};
};

class ResNet3d final : public Network {
 public:
  ResNet3d(int64_t channels, int64_t outputs, const ModelOptions& o)
      : stem_(register_module("stem", Conv3x3x3(channels, o.width))), dropout_(o.dropout) {
    int64_t in = o.width;
    for (int s = 0; s < o.depth; ++s) {
      const int64_t out = static_cast<int64_t>(o.width) << s;
      blocks_.push_back(
          register_module("b" + std::to_string(s) + "a", std::make_shared<BasicBlock3d>(in, out, s ? 2 : 1)));
      blocks_.push_back(register_module("b" + std::to_string(s) + "b", std::make_shared<BasicBlock3d>(out, out, 1)));
      in = out;
    }
    head_ = register_module("head", nn::Linear(in, outputs));
  }
  torch::Tensor forward(torch::Tensor x) override {
    auto h = torch::relu(stem_(x));
    for (auto& b : blocks_) h = b->forward(h);
    h = h.mean({2, 3, 4});
    if (dropout_ > 0) h = F::dropout(h, F::DropoutFuncOptions().p(dropout_).training(is_training()));
    return head_(h);
  }

 private:
  nn::Conv3d stem_;
  std::vector<std::shared_ptr<BasicBlock3d>> blocks_;
  nn::Linear head_{nullptr};
  double dropout_ = 0;
};

}  // namespace

std::shared_ptr<Network> MakeResNet3d(int64_t channels, int64_t outputs, const ModelOptions& o) {
  return std::make_shared<ResNet3d>(channels, outputs, o);
}

}  // namespace ladder::trainer
