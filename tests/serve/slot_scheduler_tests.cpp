// The scheduler on stories260K: greedy answers do not depend on what else is running, a
// cancelled job frees its slot, the queue has a limit, the ends and clocks are reported right, a
// slot's cells serve the next job with the same beginning, and slots save, restore and erase.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "loom/error.h"
#include "tools/loom/serve/slot_scheduler.h"

namespace loom::serve {
namespace {

const engine::Model &stories() {
    static const auto model = [] {
        const auto path = std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" /
                          "models" / "stories260K.gguf";
        if (!std::filesystem::exists(path)) {
            ADD_FAILURE() << "missing " << path << " (../shared beside the repository)";
        }
        return engine::Model::load(path.string());
    }();
    return *model;
}

Job greedy_job(const std::string &prompt, int32_t max_tokens) {
    engine::SamplingParams greedy;
    greedy.temperature = 0.0f;
    return {.prompt = stories().vocab().tokenize(prompt, true, true),
            .sampling = greedy,
            .max_tokens = max_tokens};
}

struct Result {
    std::string text, finish_reason, error;
    int64_t n_generated = 0, n_cached = 0;
    double prompt_ms = 0, predicted_ms = 0;
    std::vector<int32_t> tokens;  // with log-probabilities asked for
};

Result wait(Task &task) {
    Result r;
    for (Event e; !e.done;) {
        if (!task.next(e, std::chrono::seconds(30))) {
            ADD_FAILURE() << "no event for 30 s";
            break;
        }
        r.text += e.text;
        for (const TokenLogprob &t : e.chosen) r.tokens.push_back(t.token);
        if (e.done) {
            r.finish_reason = e.finish_reason;
            r.error = e.error;
            r.n_generated = e.counts.n_generated;
            r.n_cached = e.counts.n_cached;
            r.prompt_ms = e.counts.prompt_ms;
            r.predicted_ms = e.counts.predicted_ms;
        }
    }
    return r;
}

const std::vector<std::string> kPrompts = {"Once upon a time",   "The cat",      "Lily and Tom",
                                           "One day, a big dog", "The sun was",  "Sara had a",
                                           "In the park",        "A little bird"};

TEST(SlotScheduler, AnswersDoNotDependOnTheOtherSlots) {
    std::vector<std::string> alone;
    {
        SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 256});
        for (const auto &p : kPrompts) alone.push_back(wait(*s.submit(greedy_job(p, 24))).text);
    }
    SlotScheduler s(stories(), {.n_parallel = 4, .n_ctx = 1024, .n_batch = 16});
    std::vector<std::shared_ptr<Task>> tasks;
    for (const auto &p : kPrompts) tasks.push_back(s.submit(greedy_job(p, 24)));
    for (size_t i = 0; i < tasks.size(); ++i) {
        ASSERT_NE(tasks[i], nullptr);
        const Result r = wait(*tasks[i]);
        EXPECT_EQ(r.text, alone[i]) << kPrompts[i];
        EXPECT_EQ(r.finish_reason, "length");
        EXPECT_EQ(r.n_generated, 24);
    }
    const SlotSchedulerMetrics m = s.metrics();
    EXPECT_EQ(m.requests_total, 8);
    // Each slot keeps its last sequence (prompt and answer but the last token) for the next job.
    EXPECT_GT(m.kv_cells_used, 4 * 24);
    EXPECT_LT(m.kv_cells_used, 4 * (24 + 16));
}

TEST(SlotScheduler, CancelledJobFreesItsSlot) {
    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 512});
    auto long_job = s.submit(greedy_job("Once upon a time", 400));
    Event first;
    ASSERT_TRUE(long_job->next(first, std::chrono::seconds(30)));
    long_job->cancel();
    const Result r = wait(*long_job);
    EXPECT_EQ(r.error, "cancelled");
    EXPECT_LT(r.n_generated, 400);
    // The one slot serves the next job.
    const Result next = wait(*s.submit(greedy_job("The cat", 4)));
    EXPECT_EQ(next.n_generated, 4);
    EXPECT_EQ(s.metrics().requests_processing, 0);
}

TEST(SlotScheduler, RefusesOverTheQueueLimit) {
    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 512, .max_queue = 1});
    std::vector<std::shared_ptr<Task>> accepted;
    int refused = 0;
    for (int i = 0; i < 6; ++i) {
        auto t = s.submit(greedy_job("Once upon a time", 200));
        if (t == nullptr) {
            ++refused;
        } else {
            accepted.push_back(t);
        }
    }
    EXPECT_GE(refused, 3);  // one running, one queued, maybe one just started
    for (auto &t : accepted) t->cancel();
    for (auto &t : accepted) wait(*t);
}

TEST(SlotScheduler, StopStringEndsTheAnswerBeforeIt) {
    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 256});
    const std::string full = wait(*s.submit(greedy_job("Once upon a time", 16))).text;
    const size_t cut = full.find(" was");
    ASSERT_NE(cut, std::string::npos) << full;
    Job job = greedy_job("Once upon a time", 16);
    job.stop = {" was"};
    const Result r = wait(*s.submit(std::move(job)));
    EXPECT_EQ(r.text, full.substr(0, cut));
    EXPECT_EQ(r.finish_reason, "stop");
}

TEST(SlotScheduler, ContextEndIsALengthFinish) {
    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 16});
    const Result r = wait(*s.submit(greedy_job("Once upon a time", -1)));
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_GT(r.n_generated, 0);
}

// A job's clocks: the prompt's time ends where the generation's begins, and both lie within the
// time the caller waited (a bound, not a speed: nothing here times the machine).
TEST(SlotScheduler, TimingsSplitTheJobAtItsFirstToken) {
    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 256});
    const auto start = std::chrono::steady_clock::now();
    const Result r = wait(*s.submit(greedy_job("Once upon a time", 16)));
    const double waited =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(r.n_generated, 16);
    EXPECT_GT(r.prompt_ms, 0.0);
    EXPECT_GT(r.predicted_ms, 0.0);
    EXPECT_LE(r.prompt_ms + r.predicted_ms, waited);
}

// With --context-shift the slot drops the older half of its tokens after BOS and n_keep and goes
// on: the answer runs to max_tokens, past the slot's 16 cells, and until the first shift it is
// the answer of a slot with room to spare.
TEST(SlotScheduler, ContextShiftGoesOnPastTheSlotsContext) {
    Job job = greedy_job("Once upon a time", 40);
    job.top_logprobs = 0;
    const size_t n_prompt = job.prompt.size();
    SlotScheduler roomy(stories(), {.n_parallel = 1, .n_ctx = 256});
    const Result reference = wait(*roomy.submit(job));
    ASSERT_EQ(reference.n_generated, 40) << "the story ends early: pick a longer one";

    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 16, .context_shift = true, .n_keep = 1});
    const Result r = wait(*s.submit(job));
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_EQ(r.n_generated, 40);
    EXPECT_GE(s.metrics().context_shifts, 2);
    ASSERT_EQ(r.tokens.size(), 40u);
    const size_t before_shift = 16 - n_prompt;
    EXPECT_TRUE(std::equal(r.tokens.begin(), r.tokens.begin() + long(before_shift),
                           reference.tokens.begin()));
}

// GPT-2's learned positions cannot move: the server refuses to start rather than shift wrongly.
TEST(SlotScheduler, ContextShiftNeedsRotaryPositions) {
    const auto path =
        std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared/fixtures/gpt2/model.gguf";
    const auto gpt2 = engine::Model::load(path.string());
    try {
        SlotScheduler s(*gpt2, {.n_parallel = 1, .n_ctx = 64, .context_shift = true});
        FAIL() << "a context shift was accepted for learned positions";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("rotary"), std::string::npos) << e.what();
    }
}

// A slot keeps its cells after a job: the next job with the same beginning decodes only the rest
// (its last prompt token at least, for the logits), and answers as a slot starting empty does.
TEST(SlotScheduler, PromptCacheReusesTheSharedBeginning) {
    const std::string story = "Once upon a time, there was a little girl named Lily.";
    const std::string fresh = wait(*SlotScheduler(stories(), {.n_parallel = 1, .n_ctx = 256})
                                        .submit(greedy_job(story, 20)))
                                  .text;
    SlotScheduler s(stories(), {.n_parallel = 2, .n_ctx = 512});
    const Job first = greedy_job(story, 20);
    const Result a = wait(*s.submit(first));
    EXPECT_EQ(a.n_cached, 0);
    const Result b = wait(*s.submit(first));  // the slot that holds the story gets it
    EXPECT_EQ(b.n_cached, int64_t(first.prompt.size()) - 1);
    EXPECT_EQ(a.text, fresh);
    EXPECT_EQ(b.text, fresh);
    // The conversation goes on: the prompt is the story, the answer and more.
    const Result c = wait(*s.submit(greedy_job(story + a.text + " She", 8)));
    EXPECT_GT(c.n_cached, int64_t(first.prompt.size()));
    const std::string c_fresh = wait(*SlotScheduler(stories(), {.n_parallel = 1, .n_ctx = 256})
                                          .submit(greedy_job(story + a.text + " She", 8)))
                                    .text;
    EXPECT_EQ(c.text, c_fresh);
    // cache_prompt false: the whole prompt decoded again, the same answer.
    Job uncached = greedy_job(story + a.text + " She", 8);
    uncached.cache_prompt = false;
    const Result d = wait(*s.submit(uncached));
    EXPECT_EQ(d.n_cached, 0);
    EXPECT_EQ(d.text, c_fresh);
}

class SlotFiles : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("loom-slot-actions-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    std::string file(const std::string &name) const { return (dir_ / name).string(); }
    std::filesystem::path dir_;
};

TEST_F(SlotFiles, SavedSlotRestoresItsCellsForTheNextJob) {
    const Job job = greedy_job("Lily and Tom went to the park to play", 16);
    SlotScheduler s(stories(), {.n_parallel = 2, .n_ctx = 512});
    const Result first = wait(*s.submit(job));
    // Only slot 0 worked; it holds the prompt and the answer but its last token.
    const auto n_cells = int64_t(job.prompt.size()) + first.n_generated - 1;
    const SlotActionResult saved =
        s.slot_action({.kind = SlotAction::Kind::save, .slot = 0, .path = file("a.bin")});
    ASSERT_EQ(saved.status, 200) << saved.error;
    EXPECT_EQ(saved.n_tokens, n_cells);
    EXPECT_EQ(saved.n_bytes, std::filesystem::file_size(file("a.bin")));
    EXPECT_EQ(s.slot_action({.kind = SlotAction::Kind::erase, .slot = 0}).n_tokens, n_cells);
    EXPECT_EQ(s.metrics().kv_cells_used, 0);
    // Into the other slot, then the same job finds its cells there.
    const SlotActionResult restored =
        s.slot_action({.kind = SlotAction::Kind::restore, .slot = 1, .path = file("a.bin")});
    ASSERT_EQ(restored.status, 200) << restored.error;
    EXPECT_EQ(restored.n_tokens, n_cells);
    EXPECT_EQ(s.metrics().kv_cells_used, n_cells);
    const Result again = wait(*s.submit(job));
    EXPECT_EQ(again.n_cached, int64_t(job.prompt.size()) - 1);
    EXPECT_EQ(again.text, first.text);
}

TEST_F(SlotFiles, RefusalsSayWhy) {
    SlotScheduler s(stories(), {.n_parallel = 1, .n_ctx = 256});
    const SlotActionResult no_slot = s.slot_action({.kind = SlotAction::Kind::erase, .slot = 3});
    EXPECT_EQ(no_slot.status, 400);
    EXPECT_NE(no_slot.error.find("slot 3"), std::string::npos) << no_slot.error;
    const SlotActionResult missing =
        s.slot_action({.kind = SlotAction::Kind::restore, .slot = 0, .path = file("missing.bin")});
    EXPECT_EQ(missing.status, 404);
    {  // not a sequence file
        std::ofstream(file("junk.bin")) << "not a sequence";
    }
    const SlotActionResult junk =
        s.slot_action({.kind = SlotAction::Kind::restore, .slot = 0, .path = file("junk.bin")});
    EXPECT_EQ(junk.status, 400);
    EXPECT_NE(junk.error.find("[state]"), std::string::npos) << junk.error;
    // A slot at work is not touched.
    auto busy = s.submit(greedy_job("Once upon a time", 200));
    Event first;
    ASSERT_TRUE(busy->next(first, std::chrono::seconds(30)));
    const SlotActionResult conflict =
        s.slot_action({.kind = SlotAction::Kind::save, .slot = 0, .path = file("b.bin")});
    EXPECT_EQ(conflict.status, 409);
    EXPECT_FALSE(std::filesystem::exists(file("b.bin")));
    busy->cancel();
    wait(*busy);
}

}  // namespace
}  // namespace loom::serve
