#pragma once
// Continuous batching: n_parallel slots share one context (one KV stream each) and one decode
// loop on its own thread. Every step decodes, in one batch, the next token of each generating
// slot and then as much of the slots' pending prompts as the batch has room for, so a long
// prompt does not stall the others' generation. A request waits in a queue while every slot is
// busy (up to a limit) and owns a slot while it runs. When it ends, the slot keeps its sequence's
// cells (prompt caching, as llama-server's cache_prompt): the next job goes to the free slot
// whose cells begin as its prompt does, and decodes only the rest. A job that is cancelled (a
// client that went away) or fails, or whose context was shifted, leaves an empty slot. Idle
// slots can be saved to files, restored from them, or erased (slot_action).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

struct SlotSchedulerOptions {
    int n_parallel = 4;
    int64_t n_ctx = 4096;  // all slots together
    int64_t n_batch = 512;
    int n_threads = 0;
    bool flash_attn = false;
    DType type_k = DType::F16, type_v = DType::F16;
    int max_queue = 64;  // requests waiting for a slot before new ones are refused
    // A generation that fills its slot's context shifts it (engine/context/context_shift.h),
    // keeping BOS and the first n_keep prompt tokens, instead of ending with "length".
    bool context_shift = false;
    int32_t n_keep = 0;
};

struct Job {
    std::vector<int32_t> prompt;
    engine::SamplingParams sampling;
    int32_t max_tokens = -1;
    std::vector<std::string> stop;
    int top_logprobs = -1;                            // < 0: no log-probabilities
    std::optional<engine::grammar::Grammar> grammar;  // the output must follow it, when given
    // Control tokens whose text the output shows (and the grammar reads): a tool call form's
    // markers, which generated text otherwise leaves out. Sorted.
    std::vector<int32_t> shown_special;
    // Decode only what follows the cells the slot already holds for the prompt's beginning
    // (llama-server's cache_prompt); false decodes the whole prompt again.
    bool cache_prompt = true;
};

struct TokenLogprob {
    int32_t token;
    float logprob;
};

// A finished job's counts and clocks (its last event's), as usage and llama-server's timings
// report them.
struct AnswerCounts {
    int64_t n_prompt = 0, n_generated = 0;
    int64_t n_cached = 0;     // prompt tokens whose cells the slot already held
    double prompt_ms = 0;     // from the job's start to its first token: the prompt's decode
    double predicted_ms = 0;  // from its first token to its last
};

// What a running job reports: text as it becomes safe to send, then the end.
struct Event {
    std::string text;
    std::vector<TokenLogprob> chosen;            // per generated token in this event
    std::vector<std::vector<TokenLogprob>> top;  // alternatives per generated token
    bool done = false;
    std::string finish_reason;  // "stop" or "length" (done)
    std::string error;          // set when the job failed (done)
    AnswerCounts counts;        // (done)
};

// The handle a request holds: events to read, and a way to give up.
class Task {
  public:
    // Waits for the next event; false on timeout.
    bool next(Event &out, std::chrono::milliseconds timeout);
    // Stops the job at the next decode step and frees its slot.
    void cancel();
    bool cancelled() const;

  private:
    friend class SlotScheduler;
    void push(Event e);
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Event> events_;
    bool cancelled_ = false;
};

struct SlotSchedulerMetrics {
    int64_t prompt_tokens = 0, generated_tokens = 0;
    double prompt_seconds = 0.0, generation_seconds = 0.0;
    int64_t requests_processing = 0, requests_queued = 0, requests_total = 0;
    int64_t kv_cells_used = 0, kv_cells = 0;
    int64_t context_shifts = 0;
};

// A slot as GET /slots shows it.
struct SlotState {
    int id = 0;
    bool busy = false;
    int64_t n_ctx = 0;     // cells the slot may hold
    int64_t n_cells = 0;   // tokens whose cells it holds (kept for the next prompt when idle)
    int64_t n_prompt = 0;  // of the running job: prompt tokens, those in the cache, generated
    int64_t n_prompt_done = 0, n_generated = 0;
};

// What POST /slots/{id}?action=... asks of an idle slot.
struct SlotAction {
    enum class Kind { save, restore, erase } kind = Kind::save;
    int slot = 0;
    std::string path;  // the file, for save and restore
};
struct SlotActionResult {
    int status = 200;  // HTTP: 400 bad id or file, 404 no such file, 409 busy slot, 503 stopping
    std::string error;
    int64_t n_tokens = 0;  // saved, restored or erased
    uint64_t n_bytes = 0;  // written or read
    double ms = 0.0;
};

class SlotScheduler {
  public:
    SlotScheduler(const engine::Model &model, const SlotSchedulerOptions &options);
    ~SlotScheduler();  // shutdown()
    // Stops the loop: unfinished and queued jobs end with an error event. Idempotent.
    void shutdown();
    SlotScheduler(const SlotScheduler &) = delete;
    SlotScheduler &operator=(const SlotScheduler &) = delete;

    // Queues a job; null when the queue is full (the caller answers 503).
    std::shared_ptr<Task> submit(Job job);
    int64_t slot_context() const { return slot_ctx_; }
    // The KV cache's size, cells, types and bytes a cell (engine::describe_memory).
    std::string memory_summary() const { return engine::describe_memory(ctx_.memory()); }
    SlotSchedulerMetrics metrics() const;
    std::vector<SlotState> slots() const;
    // Runs an action on an idle slot between decode steps, and waits for it.
    SlotActionResult slot_action(const SlotAction &action);

  private:
    struct Slot;
    void loop();
    void step(std::unique_lock<std::mutex> &lock);
    void start_queued();
    void finish(Slot &slot, std::string reason, std::string error = {});
    void after_decode(Slot &slot, std::span<const float> logits);
    Slot *free_slot_for(const std::vector<int32_t> &prompt);
    void run_actions();
    SlotActionResult run_action(const SlotAction &action);
    // The vocabulary's pieces for grammars, with these control tokens shown: built on first use
    // and kept (one per tool call form at most), so that a request pays for its grammar only.
    std::shared_ptr<const engine::grammar::VocabPieces> vocab_pieces(
        const std::vector<int32_t> &shown_special);

    const engine::Model &model_;
    SlotSchedulerOptions options_;
    int64_t slot_ctx_;
    engine::Context ctx_;
    std::vector<std::unique_ptr<Slot>> slots_;
    std::deque<std::pair<Job, std::shared_ptr<Task>>> queue_;
    struct PendingAction;
    std::deque<std::shared_ptr<PendingAction>> actions_;
    mutable std::mutex mutex_;
    std::condition_variable work_;
    bool stopping_ = false;
    SlotSchedulerMetrics metrics_;
    std::map<std::vector<int32_t>, std::shared_ptr<const engine::grammar::VocabPieces>>
        vocab_pieces_;  // by the shown control tokens
    std::mutex join_mutex_;
    std::thread thread_;
};

}  // namespace loom::serve
