// SamplerThread: the jobs that call the samplers, and their answers posted back to the loop.
#include "server/sampler_thread.h"

#include <boost/asio/post.hpp>
#include <exception>
#include <future>
#include <utility>

#include "common/log.h"

namespace ladder::server {

namespace {

constexpr const char* kLog = "coordinator";

SamplerThread::Answer AskOne(SamplerThread::Request& r, const std::atomic<bool>& stopping) {
  SamplerThread::Answer a;
  a.search_id = r.search_id;
  a.first = r.first;
  a.count = r.count;
  try {
    for (int i = 0; i < r.count && !stopping; ++i) {
      auto params = r.sampler->Ask(r.first + i);
      if (!params) {
        a.waiting = r.sampler->Waiting();
        break;
      }
      a.points.push_back(std::move(*params));
    }
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  return a;
}

}  // namespace

SamplerThread::SamplerThread(boost::asio::io_context& loop) : loop_(loop) {}

SamplerThread::~SamplerThread() { Stop(); }

void SamplerThread::Tell(std::shared_ptr<search::Sampler> sampler, int64_t number, search::Params params,
                         std::optional<double> objective) {
  boost::asio::post(jobs_, [sampler = std::move(sampler), number, params = std::move(params), objective] {
    try {
      sampler->Tell(number, params, objective);
    } catch (const std::exception& e) {
      LogError(kLog, "a sampler failed to learn trial " + std::to_string(number) + "'s result: " + e.what());
    }
  });
}

void SamplerThread::AddPending(std::shared_ptr<search::Sampler> sampler, int64_t number, search::Params params) {
  boost::asio::post(jobs_, [sampler = std::move(sampler), number, params = std::move(params)] {
    try {
      sampler->AddPending(number, params);
    } catch (const std::exception& e) {
      LogError(kLog, "a sampler failed to take running trial " + std::to_string(number) + ": " + e.what());
    }
  });
}

void SamplerThread::Ask(std::vector<Request> requests, std::function<void(std::vector<Answer>)> done) {
  asking_ = true;
  loop_work_.emplace(loop_.get_executor());
  boost::asio::post(jobs_, [this, &loop = loop_, requests = std::move(requests), done = std::move(done),
                            alive = std::weak_ptr<bool>(alive_)]() mutable {
    std::vector<Answer> answers;
    answers.reserve(requests.size());
    for (Request& r : requests) answers.push_back(AskOne(r, stopping_));
    requests.clear();  // the samplers' references go here, on their thread
    // Here `this` lives (Stop joins this thread) and only stopping_, an atomic, is read; its other members are
    // touched on the loop, and only while `alive` holds (Stop, on the loop, expires it).
    boost::asio::post(loop, [this, answers = std::move(answers), done = std::move(done), alive]() mutable {
      if (alive.expired()) return;
      asking_ = false;
      loop_work_.reset();
      done(std::move(answers));
    });
  });
}

void SamplerThread::WaitForJobs() {
  if (!alive_) return;
  std::promise<void> ran;
  boost::asio::post(jobs_, [&ran] { ran.set_value(); });
  ran.get_future().wait();
}

void SamplerThread::Stop() {
  if (!alive_) return;
  alive_.reset();
  stopping_ = true;
  asking_ = false;
  loop_work_.reset();
  thread_.stop();
  thread_.join();
}

}  // namespace ladder::server
