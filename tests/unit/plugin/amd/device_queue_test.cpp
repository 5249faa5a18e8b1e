// Unit test of tg::sdk::DeviceQueue (tg/sdk/device_queue.hpp), the AMD plugin's HWQueue, over a scripted backend:
// commands reach the stream only at submit and in recorded order, signals only grow, waiting for a value nothing
// raises is an error and not a hang, a wait that times out says so, and timestamps read the backend's clock.
#include <tg/sdk/device_queue.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

// The stream as a log of what was issued; an event is a shared flag the test completes (or not).
struct Log {
  std::vector<std::string> issued;
  std::vector<std::shared_ptr<bool>> events;
  double now_ms = 0;
};

struct ScriptedBackend {
  using Program = std::string;
  struct Event {
    std::shared_ptr<bool> done;
    double at_ms = 0;
    explicit operator bool() const { return done != nullptr; }
  };
  Log* log;

  void bind() {}
  void launch(const Program& p, std::vector<unsigned char>& args, const uint32_t grid[3], const uint32_t block[3]) {
    log->issued.push_back(tg::sdk::cat("exec ", p, " args ", args.size(), " grid ", grid[0], " block ", block[0]));
  }
  void copy(const tg_buffer_desc& dst, uint64_t dst_offset, const tg_buffer_desc& src, uint64_t src_offset,
            uint64_t size) {
    log->issued.push_back(tg::sdk::cat("copy ", dst.addr, "+", dst_offset, "<-", src.addr, "+", src_offset, " ", size));
  }
  Event record(bool timing) {
    log->issued.push_back(timing ? "event (timing)" : "event");
    log->events.push_back(std::make_shared<bool>(false));
    return Event{log->events.back(), log->now_ms};
  }
  bool done(const Event& e) { return *e.done; }
  void synchronize(const Event& e) {
    if (!*e.done) throw tg::sdk::Error(TG_ERR_INTERNAL, "synchronize on an event the script never completes");
  }
  double elapsed_ms(const Event& from, const Event& to) { return to.at_ms - from.at_ms; }
};

using Queue = tg::sdk::DeviceQueue<ScriptedBackend>;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tg::sdk::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceQueue, IssuesRecordedCommandsInOrderAtSubmit) {
  Log log;
  Queue q(ScriptedBackend{&log});
  ASSERT_EQ(log.issued, std::vector<std::string>{"event (timing)"});  // the timestamps' origin
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};
  const unsigned char args[12] = {};
  q.exec("k1", args, sizeof args, grid, block);
  const tg_buffer_desc a{100, 128, nullptr}, b{200, 64, nullptr};
  q.copy(a, 8, b, 0, 56);
  q.copy(b, 0, a, 0, 0);  // nothing to copy: not issued
  q.signal(1);
  EXPECT_EQ(log.issued.size(), 1u) << "nothing reaches the stream before submit";
  q.submit();
  EXPECT_EQ(log.issued, (std::vector<std::string>{"event (timing)", "exec k1 args 12 grid 4 block 256",
                                                  "copy 100+8<-200+0 56", "event"}));
  q.submit();  // an empty submit issues nothing
  EXPECT_EQ(log.issued.size(), 4u);
}

TEST(DeviceQueue, SignalsOnlyGrowAndWaitsEnd) {
  Log log;
  Queue q(ScriptedBackend{&log});
  q.signal(5);
  EXPECT_NE(error_of([&] { q.signal(4); }).find("signal value 4 is below 5, and signals only grow"), std::string::npos);
  q.signal(5);  // equal is fine
  EXPECT_NE(error_of([&] { q.wait(5, 0); }).find("the command that raises it is not submitted"), std::string::npos);
  EXPECT_NE(error_of([&] { q.wait(6, 0); }).find("no recorded command raises it that far"), std::string::npos);
  q.submit();
  EXPECT_NE(error_of([&] { q.wait(5, 1000); }).find("timed out after 1000 ns waiting for signal value 5"),
            std::string::npos);
  *log.events[1] = true;                           // the first signal's event completes
  EXPECT_EQ(error_of([&] { q.wait(3, 0); }), "");  // a lower value is reached by the first signal at or above it
  EXPECT_EQ(error_of([&] { q.wait(5, 0); }), "");  // already there
  EXPECT_NE(error_of([&] { q.signal(2); }).find("below 5"), std::string::npos);
}

TEST(DeviceQueue, TimestampsReadTheirEvents) {
  Log log;
  Queue q(ScriptedBackend{&log});
  log.now_ms = 2.5;
  const uint64_t slot = q.timestamp();
  EXPECT_NE(error_of([&] { q.read_timestamp(slot); }).find("has not run yet"), std::string::npos);
  EXPECT_NE(error_of([&] { q.read_timestamp(slot + 1); }).find("no timestamp slot 1 (1 recorded)"), std::string::npos);
  q.submit();
  EXPECT_NE(error_of([&] { q.read_timestamp(slot); }).find("has not run yet"), std::string::npos);
  *log.events.back() = true;
  EXPECT_EQ(q.read_timestamp(slot), 2500000u);
}

}  // namespace
