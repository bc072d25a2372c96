#include "tools/loom/serve/slot_scheduler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/serve/text_stream.h"

namespace loom::serve {

using Clock = std::chrono::steady_clock;

bool Task::next(Event &out, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
    out = std::move(events_.front());
    events_.pop_front();
    return true;
}

void Task::cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
}

bool Task::cancelled() const {
    std::lock_guard lock(mutex_);
    return cancelled_;
}

void Task::push(Event e) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(e));
    }
    ready_.notify_one();
}

struct SlotScheduler::Slot {
    int id = 0;
    std::shared_ptr<Task> task;  // null while free
    Job job;
    std::unique_ptr<engine::Sampler> sampler;
    std::unique_ptr<engine::grammar::TokenGrammar> grammar;  // the job's, over the vocabulary
    TextStream text;
    size_t n_prompt_done = 0;  // prompt tokens in the cache
    engine::Pos n_past = 0;    // positions in the cache
    int32_t next_token = -1;   // sampled, to be decoded in the next step
    int64_t n_generated = 0;
    int64_t output = -1;  // its row among the current batch's outputs, or -1
    size_t n_taken = 0;   // tokens it has in the current batch
    // The tokens whose cells the slot's sequence holds, at positions 0, 1, ...: kept after a job
    // for the next one with the same beginning. Cleared when a context shift moves them.
    std::vector<int32_t> cached;
    bool shifted = false;
    int64_t n_cached = 0;                    // of the current job's prompt, found in the cells
    Clock::time_point started, first_token;  // of the current job: its start, its first token

    bool busy() const { return task != nullptr; }
    bool prefilling() const { return n_prompt_done < job.prompt.size(); }
};

namespace {

// Cells per slot: an equal share of --ctx-size, at most the context the model's positions are
// meant for (its training context, or more with YaRN): positions past it are refused by models
// with learned positions, and degrade the others.
int64_t slot_cells(const engine::Model &model, const SlotSchedulerOptions &o) {
    int64_t per_slot = o.n_ctx / std::max(1, o.n_parallel);
    per_slot = std::min(per_slot, model.hparams().n_ctx_max());
    // A slot must hold a prompt and room to answer.
    constexpr int64_t kMinSlotCells = 16;
    if (per_slot < kMinSlotCells) {
        fail("serve",
             "--ctx-size {} over --parallel {} leaves {} cells per slot; at least {} are needed",
             o.n_ctx, o.n_parallel, per_slot, kMinSlotCells);
    }
    return per_slot;
}

engine::ContextOptions context_options(const SlotSchedulerOptions &o, int64_t slot_ctx) {
    return {.n_ctx = slot_ctx * o.n_parallel,
            .n_batch = o.n_batch,
            .n_ubatch = std::min<int64_t>(o.n_batch, 512),
            .n_threads = o.n_threads,
            .flash_attn = o.flash_attn,
            .type_k = o.type_k,
            .type_v = o.type_v,
            .n_seq_max = o.n_parallel,
            // One stream per slot: a slot's results do not depend on the others'.
            .kv_unified = false};
}

// log softmax of the logits at `token`, and the `n` most likely tokens with theirs.
void log_probabilities(std::span<const float> logits, int32_t token, int n, Event &e) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (const float l : logits) sum += std::exp(double(l) - max);
    const double log_sum = std::log(sum) + max;
    e.chosen.push_back({token, float(double(logits[size_t(token)]) - log_sum)});
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    const size_t k = std::min(size_t(n), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](int32_t a, int32_t b) {
        return logits[size_t(a)] > logits[size_t(b)] ||
               (logits[size_t(a)] == logits[size_t(b)] && a < b);
    });
    std::vector<TokenLogprob> top;
    for (size_t i = 0; i < k; ++i) {
        top.push_back({ids[i], float(double(logits[size_t(ids[i])]) - log_sum)});
    }
    e.top.push_back(std::move(top));
}

}  // namespace

SlotScheduler::SlotScheduler(const engine::Model &model, const SlotSchedulerOptions &options)
    : model_(model),
      options_(options),
      slot_ctx_(slot_cells(model, options)),
      ctx_(model, context_options(options, slot_ctx_)) {
    if (options.context_shift) engine::require_context_shift(model, "serve");
    for (int i = 0; i < options.n_parallel; ++i) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->id = i;
    }
    metrics_.kv_cells = ctx_.memory().size();
    thread_ = std::thread([this] { loop(); });
}

SlotScheduler::~SlotScheduler() {
    shutdown();
}

void SlotScheduler::shutdown() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_.notify_all();
    std::lock_guard lock(join_mutex_);
    if (thread_.joinable()) thread_.join();
}

std::shared_ptr<Task> SlotScheduler::submit(Job job) {
    std::lock_guard lock(mutex_);
    if (stopping_) return nullptr;  // the loop is gone: nothing would answer
    // Queued jobs take the free slots first; max_queue more may wait.
    const auto free =
        std::count_if(slots_.begin(), slots_.end(), [](const auto &s) { return !s->busy(); });
    if (int64_t(queue_.size()) >= free + options_.max_queue) return nullptr;
    auto task = std::make_shared<Task>();
    queue_.emplace_back(std::move(job), task);
    ++metrics_.requests_total;
    work_.notify_one();
    return task;
}

SlotSchedulerMetrics SlotScheduler::metrics() const {
    std::lock_guard lock(mutex_);
    return metrics_;
}

std::vector<SlotState> SlotScheduler::slots() const {
    std::lock_guard lock(mutex_);  // the loop changes a slot only while it holds it
    std::vector<SlotState> out;
    for (const auto &s : slots_) {
        SlotState state{.id = s->id,
                        .busy = s->busy(),
                        .n_ctx = slot_ctx_,
                        .n_cells = int64_t(s->cached.size())};
        if (s->busy()) {
            state.n_prompt = int64_t(s->job.prompt.size());
            state.n_prompt_done = int64_t(s->n_prompt_done);
            state.n_generated = s->n_generated;
        }
        out.push_back(state);
    }
    return out;
}

struct SlotScheduler::PendingAction {
    SlotAction action;
    std::promise<SlotActionResult> result;
};

namespace {

size_t common_prefix(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
    return size_t(
        std::mismatch(a.begin(), a.begin() + long(std::min(a.size(), b.size())), b.begin()).first -
        a.begin());
}

}  // namespace

SlotScheduler::Slot *SlotScheduler::free_slot_for(const std::vector<int32_t> &prompt) {
    // The free slot whose cells share the longest beginning with the prompt; among equals, the
    // one holding the fewest cells (so a slot with a long, unrelated conversation is kept).
    Slot *best = nullptr;
    size_t best_common = 0;
    for (auto &slot : slots_) {
        if (slot->busy()) continue;
        const size_t common = common_prefix(slot->cached, prompt);
        if (best == nullptr || common > best_common ||
            (common == best_common && slot->cached.size() < best->cached.size())) {
            best = slot.get();
            best_common = common;
        }
    }
    return best;
}

void SlotScheduler::start_queued() {
    while (!queue_.empty()) {
        Slot *slot = free_slot_for(queue_.front().first.prompt);
        if (slot == nullptr) break;
        auto [job, task] = std::move(queue_.front());
        queue_.pop_front();
        const bool fits = !job.prompt.empty() && int64_t(job.prompt.size()) < slot_ctx_;
        if (task->cancelled() || !fits) {  // gone before it started, or cannot start
            Event e;
            e.done = true;
            e.error = fits ? "cancelled" : "the prompt does not fit the slot's context";
            task->push(std::move(e));
            continue;
        }
        Slot &s = *slot;
        s.sampler = std::make_unique<engine::Sampler>(job.sampling);
        for (const int32_t t : job.prompt) s.sampler->accept(t);
        s.grammar = job.grammar ? std::make_unique<engine::grammar::TokenGrammar>(
                                      *job.grammar, vocab_pieces(job.shown_special))
                                : nullptr;
        s.text = TextStream(job.stop);
        // The cells of the prompt's beginning stay; at least its last token is decoded again,
        // for its logits. A sliding-window cache may have let go of what that token needs.
        auto keep =
            engine::Pos(std::min(common_prefix(s.cached, job.prompt), job.prompt.size() - 1));
        if (!job.cache_prompt) keep = 0;
        if (keep > 0 && !ctx_.memory().seq_can_resume(s.id, keep)) keep = 0;
        ctx_.memory().seq_rm(s.id, keep, -1);
        s.cached.resize(size_t(keep));
        s.shifted = false;
        s.n_cached = keep;
        s.job = std::move(job);
        s.task = std::move(task);
        s.n_prompt_done = size_t(keep);
        s.n_past = keep;
        s.n_generated = 0;
        s.next_token = -1;
        s.started = Clock::now();
        s.first_token = {};
    }
    int64_t busy = 0;
    for (const auto &s : slots_) busy += s->busy();
    metrics_.requests_processing = busy;
    metrics_.requests_queued = int64_t(queue_.size());
}

std::shared_ptr<const engine::grammar::VocabPieces> SlotScheduler::vocab_pieces(
    const std::vector<int32_t> &shown_special) {
    auto &pieces = vocab_pieces_[shown_special];
    if (pieces == nullptr) pieces = engine::grammar::VocabPieces::of(model_.vocab(), shown_special);
    return pieces;
}

void SlotScheduler::loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        run_actions();
        start_queued();
        const bool any =
            std::any_of(slots_.begin(), slots_.end(), [](const auto &s) { return s->busy(); });
        if (!any) {
            work_.wait(lock, [&] { return stopping_ || !queue_.empty() || !actions_.empty(); });
            continue;
        }
        step(lock);
    }
    for (auto &slot : slots_) {
        if (slot->busy()) finish(*slot, "stop", "the server is shutting down");
    }
    for (auto &[job, task] : queue_) {
        Event e;
        e.done = true;
        e.error = "the server is shutting down";
        task->push(std::move(e));
    }
    queue_.clear();
    for (auto &pending : actions_) {
        pending->result.set_value({.status = 503, .error = "the server is shutting down"});
    }
    actions_.clear();
}

void SlotScheduler::finish(Slot &slot, std::string reason, std::string error) {
    Event e;
    e.text = error.empty() ? slot.text.finish() : std::string();
    e.done = true;
    e.finish_reason = std::move(reason);
    e.error = std::move(error);
    const auto ms = [](Clock::duration d) {
        return std::chrono::duration<double, std::milli>(d).count();
    };
    const auto now = Clock::now();
    // A job that ended before its first token spent all its time on the prompt.
    const auto first = slot.first_token == Clock::time_point{} ? now : slot.first_token;
    e.counts = {.n_prompt = int64_t(slot.job.prompt.size()),
                .n_generated = slot.n_generated,
                .n_cached = slot.n_cached,
                .prompt_ms = ms(first - slot.started),
                .predicted_ms = ms(now - first)};
    const bool keep = e.error.empty() && !slot.shifted;
    slot.task->push(std::move(e));
    slot.task.reset();
    if (!keep) {
        ctx_.memory().seq_rm(slot.id, 0, -1);
        slot.cached.clear();
    }
}

void SlotScheduler::after_decode(Slot &slot, std::span<const float> logits) {
    if (slot.first_token == Clock::time_point{}) slot.first_token = Clock::now();
    const int32_t token = slot.sampler->sample(logits, slot.grammar.get());
    slot.sampler->accept(token);
    if (slot.grammar != nullptr) slot.grammar->accept(token);
    const engine::Vocab &vocab = model_.vocab();
    if (vocab.is_eog(token)) return finish(slot, "stop");
    ++slot.n_generated;
    ++metrics_.generated_tokens;
    Event e;
    if (slot.job.top_logprobs >= 0) log_probabilities(logits, token, slot.job.top_logprobs, e);
    const bool shown =
        std::binary_search(slot.job.shown_special.begin(), slot.job.shown_special.end(), token);
    e.text = slot.text.push(vocab.token_to_piece(token, shown));
    if (slot.text.stopped()) {
        slot.task->push(std::move(e));
        return finish(slot, "stop");
    }
    slot.task->push(std::move(e));
    if (slot.n_generated == slot.job.max_tokens) return finish(slot, "length");
    if (slot.n_past >= slot_ctx_) {
        // As llama.cpp's server: BOS, then n_keep tokens of the prompt.
        const auto n_keep = engine::Pos(std::min<int64_t>(
            int64_t(slot.job.prompt.size()), options_.n_keep + (vocab.add_bos() ? 1 : 0)));
        if (!options_.context_shift || n_keep >= slot_ctx_ - 1) return finish(slot, "length");
        slot.n_past = engine::shift_context(ctx_.memory(), slot.id, slot.n_past, n_keep);
        slot.shifted = true;
        ++metrics_.context_shifts;
    }
    slot.next_token = token;
}

void SlotScheduler::step(std::unique_lock<std::mutex> &lock) {
    for (auto &slot : slots_) {
        if (slot->busy() && slot->task->cancelled()) finish(*slot, "stop", "cancelled");
    }
    // Generating slots first, one token each; then prompts, as far as the batch allows.
    engine::Batch batch;
    int64_t n_outputs = 0, n_prompt_tokens = 0;
    for (auto &slot : slots_) {
        slot->output = -1;
        slot->n_taken = 0;
        if (!slot->busy() || slot->prefilling()) continue;
        batch.add(slot->next_token, slot->n_past, slot->id, true);
        slot->output = n_outputs++;
        slot->n_taken = 1;
    }
    for (auto &slot : slots_) {
        if (!slot->busy() || !slot->prefilling()) continue;
        const auto &prompt = slot->job.prompt;
        const size_t room = size_t(std::max<int64_t>(0, options_.n_batch - batch.size()));
        const size_t take = std::min(room, prompt.size() - slot->n_prompt_done);
        for (size_t i = 0; i < take; ++i) {
            const size_t k = slot->n_prompt_done + i;
            batch.add(prompt[k], engine::Pos(k), slot->id, k + 1 == prompt.size());
        }
        if (take > 0 && slot->n_prompt_done + take == prompt.size()) slot->output = n_outputs++;
        slot->n_taken = take;
        n_prompt_tokens += int64_t(take);
    }
    if (batch.size() == 0) return;

    lock.unlock();
    const auto start = Clock::now();
    std::string error;
    try {
        ctx_.decode(batch);
    } catch (const std::exception &e) {  // a bad batch, or out of memory: fail these slots only
        error = e.what();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    lock.lock();

    for (auto &slot : slots_) {
        if (!slot->busy() || slot->n_taken == 0) continue;
        if (!error.empty()) {
            finish(*slot, "stop", error);
            continue;
        }
        if (slot->prefilling()) {
            const auto &prompt = slot->job.prompt;
            const auto done = prompt.begin() + long(slot->n_prompt_done);
            slot->cached.insert(slot->cached.end(), done, done + long(slot->n_taken));
            slot->n_prompt_done += slot->n_taken;
            slot->n_past = engine::Pos(slot->n_prompt_done);
        } else {
            slot->cached.push_back(slot->next_token);
            ++slot->n_past;
        }
        if (slot->output < 0) continue;
        try {
            after_decode(*slot, ctx_.logits(slot->output));
        } catch (const std::exception &e) {  // e.g. every logit NaN: this slot fails alone
            if (slot->busy()) finish(*slot, "stop", e.what());
        }
    }
    // A step mixing both kinds has no per-token clock: its time is shared by token count.
    const double prompt_share = double(n_prompt_tokens) / double(batch.size());
    metrics_.prompt_tokens += n_prompt_tokens;
    metrics_.prompt_seconds += seconds * prompt_share;
    metrics_.generation_seconds += seconds * (1.0 - prompt_share);
    metrics_.kv_cells_used = ctx_.memory().used();
}

SlotActionResult SlotScheduler::slot_action(const SlotAction &action) {
    auto pending = std::make_shared<PendingAction>();
    pending->action = action;
    std::future<SlotActionResult> result = pending->result.get_future();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return {.status = 503, .error = "the server is shutting down"};
        actions_.push_back(pending);
    }
    work_.notify_one();
    return result.get();
}

void SlotScheduler::run_actions() {
    while (!actions_.empty()) {
        const std::shared_ptr<PendingAction> pending = std::move(actions_.front());
        actions_.pop_front();
        const auto start = Clock::now();
        SlotActionResult r;
        try {
            r = run_action(pending->action);
        } catch (const std::exception &e) {
            r = {.status = 400, .error = e.what()};
        }
        r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        pending->result.set_value(std::move(r));
    }
    metrics_.kv_cells_used = ctx_.memory().used();
}

SlotActionResult SlotScheduler::run_action(const SlotAction &a) {
    if (a.slot < 0 || a.slot >= int(slots_.size())) {
        return {.status = 400,
                .error = fmt::format("slot {} does not exist (0..{})", a.slot, slots_.size() - 1)};
    }
    Slot &slot = *slots_[size_t(a.slot)];
    if (slot.busy()) {
        return {.status = 409, .error = fmt::format("slot {} is busy with a request", a.slot)};
    }
    SlotActionResult r;
    switch (a.kind) {
        case SlotAction::Kind::save:
            engine::save_sequence(a.path, ctx_, slot.id, {.tokens = slot.cached});
            r.n_tokens = int64_t(slot.cached.size());
            r.n_bytes = std::filesystem::file_size(a.path);
            break;
        case SlotAction::Kind::restore: {
            if (!std::filesystem::exists(a.path)) {
                return {.status = 404, .error = fmt::format("{}: no such file", a.path)};
            }
            const engine::SavedSequence saved = engine::read_sequence(a.path, ctx_);
            try {
                ctx_.place_seq(slot.id, saved.cells, a.path);
                slot.cached = saved.state.tokens;
            } catch (...) {  // no room: the slot is left empty
                slot.cached.clear();
                throw;
            }
            r.n_tokens = int64_t(slot.cached.size());
            r.n_bytes = std::filesystem::file_size(a.path);
            break;
        }
        case SlotAction::Kind::erase:
            ctx_.memory().seq_rm(slot.id, 0, -1);
            r.n_tokens = int64_t(slot.cached.size());
            slot.cached.clear();
            break;
    }
    return r;
}

}  // namespace loom::serve
