#include "tools/loom/serve/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "loom/engine.h"
#include "loom/error.h"
#include "tools/loom/serve/chat_page.h"
#include "tools/loom/serve/chat_prompt.h"
#include "tools/loom/serve/client_connection.h"
#include "tools/loom/serve/connection_loop.h"
#include "tools/loom/serve/embeddings.h"
#include "tools/loom/serve/functionary.h"
#include "tools/loom/serve/harmony.h"
#include "tools/loom/serve/metrics.h"
#include "tools/loom/serve/reasoning.h"
#include "tools/loom/serve/request.h"
#include "tools/loom/serve/rerank.h"
#include "tools/loom/serve/responses.h"
#include "tools/loom/serve/slot_actions.h"
#include "tools/loom/serve/slot_scheduler.h"
#include "tools/loom/serve/tool_calls.h"

namespace loom::serve {
namespace {

// Counts a request in flight for as long as it lives (the shutdown waits for them).
struct InFlight {
    std::atomic<int> &n;
    explicit InFlight(std::atomic<int> &count) : n(count) { ++n; }
    ~InFlight() { --n; }
    InFlight(const InFlight &) = delete;
    InFlight &operator=(const InFlight &) = delete;
};

using json = nlohmann::json;

// Generated text may hold bytes that are not UTF-8 (a model can emit any byte token): they are
// sent as U+FFFD rather than failing the response.
std::string to_text(const json &body) {
    return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void send_json(httplib::Response &res, int status, const json &body) {
    res.status = status;
    res.set_content(to_text(body), "application/json");
}

void send_error(httplib::Response &res, int status, const std::string &message,
                const std::string &param = {}) {
    send_json(res, status, error_json(status, message, param));
}

std::string random_id(const char *prefix) {
    static std::atomic<uint64_t> counter{0};
    std::random_device rd;
    return fmt::format("{}-{:x}{:x}", prefix, rd(), counter++);
}

int64_t unix_time() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// How long a request waits for its next event before checking the client is still there: under
// one decode step of any model worth serving, so a hang-up is seen within a step.
constexpr auto kPoll = std::chrono::milliseconds(20);

// A chat answer taken apart as it streams: the <think> block (reasoning.h), then tool calls in
// the rest (tool_calls.h), each call given an id; or, for gpt-oss, its harmony messages
// (harmony.h), and for Functionary v3.2 its recipients' messages (functionary.h). The same for
// streamed and whole answers, since where the text is cut changes no part.
class AnswerParts {
  public:
    // `form`: the template's; `parse_calls`: the request asks for calls to be read.
    AnswerParts(bool split_reasoning, bool prompt_opened_reasoning, ToolCallForm form,
                bool parse_calls, const nlohmann::json &tools)
        : form_(form) {
        if (form == ToolCallForm::harmony) {
            if (split_reasoning || parse_calls) harmony_.emplace(parse_calls);
            return;
        }
        // Every answer on its template begins with a recipient line, calls or not.
        if (form == ToolCallForm::functionary_v32) {
            functionary_.emplace(parse_calls);
            return;
        }
        if (split_reasoning) reasoning_.emplace(prompt_opened_reasoning);
        if (parse_calls && form != ToolCallForm::none) calls_.emplace(form, tools);
    }
    struct Piece {
        std::string content, reasoning;
        std::vector<ToolCall> calls;
    };
    // The parts of the next `text`; `done` at the answer's end.
    Piece take(const std::string &text, bool done) {
        Piece out{.content = text};
        if (harmony_) {
            HarmonyParser::Parts parts = harmony_->push(text);
            if (done) add(parts, harmony_->finish());
            out = {std::move(parts.content), std::move(parts.reasoning), std::move(parts.calls)};
        }
        if (functionary_) {
            FunctionaryParser::Parts parts = functionary_->push(text);
            if (done) add(parts, functionary_->finish());
            out.content = std::move(parts.content);
            out.calls = std::move(parts.calls);
        }
        if (reasoning_) {
            ReasoningSplit::Parts parts = reasoning_->push(out.content);
            if (done) add(parts, reasoning_->finish());
            out.content = std::move(parts.content);
            out.reasoning = std::move(parts.reasoning);
        }
        if (calls_) {
            ToolCallParser::Parts parts = calls_->push(out.content);
            // In the forms without a closing marker, the calls come with the end.
            if (done) add(parts, calls_->finish());
            out.content = std::move(parts.content);
            out.calls = std::move(parts.calls);
        }
        for (ToolCall &c : out.calls) {
            if (c.id.empty()) c.id = new_tool_call_id(form_);
        }
        return out;
    }

  private:
    // Each parser's finish() after its last push().
    template <typename Parts>
    static void add(Parts &parts, Parts rest) {
        parts.content += rest.content;
        if constexpr (requires { parts.reasoning; }) parts.reasoning += rest.reasoning;
        if constexpr (requires { parts.calls; }) {
            for (ToolCall &c : rest.calls) parts.calls.push_back(std::move(c));
        }
    }
    ToolCallForm form_;
    std::optional<HarmonyParser> harmony_;
    std::optional<FunctionaryParser> functionary_;
    std::optional<ReasoningSplit> reasoning_;
    std::optional<ToolCallParser> calls_;
};

// One of a request's `n` answers: its task, the parts its text is taken apart into, and what its
// response is built from.
struct Choice {
    std::shared_ptr<Task> task;
    AnswerParts answer;
    Completion completion;
    bool done = false;  // its last event has come
    bool first = true;  // no chunk of it sent yet
};

// The usage of all the answers: the prompt once (as OpenAI counts it), the tokens generated.
Completion total_usage(const std::vector<Choice> &choices) {
    Completion totals = choices.front().completion;
    totals.counts.n_generated = 0;
    for (const Choice &c : choices) totals.counts.n_generated += c.completion.counts.n_generated;
    return totals;
}

// The tokens that stand for a tool call form's markers in this vocabulary (one token whose
// text is the marker each), sorted: the answer must show them for its calls to be found.
std::vector<int32_t> marker_tokens(const engine::Vocab &vocab, ToolCallForm form) {
    std::vector<int32_t> ids;
    for (const std::string_view marker : tool_call_markers(form)) {
        const std::vector<int32_t> t = vocab.tokenize(marker, false, true);
        if (t.size() == 1 && vocab.token_to_piece(t[0], true) == marker) ids.push_back(t[0]);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

}  // namespace

struct HttpServer::Impl {
    ServeOptions options;
    ConnectionLoopServer http;
    std::atomic<bool> ready{false};
    std::atomic<bool> stop_requested{false};
    // Stopping: requests in flight finish, new ones get 503 (options.shutdown_timeout_seconds).
    std::atomic<bool> draining{false};
    std::atomic<int> embeddings_in_flight{0};
    std::unique_ptr<engine::Model> model;
    std::unique_ptr<SlotScheduler> scheduler;
    // An embedding model's context (no LM head): /v1/embeddings requests, one at a time.
    std::unique_ptr<engine::Context> embedder;
    std::mutex embed_mutex;
    std::string model_name;
    std::optional<engine::ChatFormatter> chat;  // the chat prompt's format, chosen at start-up

    explicit Impl(ServeOptions o)
        : options(std::move(o)),
          http(ConnectionLimits{.head_seconds = options.header_timeout_seconds,
                                .body_min_rate = options.body_min_rate,
                                .read_seconds = double(options.timeout_seconds),
                                .write_seconds = double(options.timeout_seconds),
                                .keep_alive_seconds = double(options.keep_alive_seconds)}) {}

    void routes();
    bool authorized(const httplib::Request &req) const;
    void completions(const httplib::Request &req, httplib::Response &res, bool chat);
    void embeddings(const httplib::Request &req, httplib::Response &res);
    void rerank(const httplib::Request &req, httplib::Response &res);
    void tokenize(const httplib::Request &req, httplib::Response &res);
    void detokenize(const httplib::Request &req, httplib::Response &res);
    void slot_action(const httplib::Request &req, httplib::Response &res);
    json props() const;
    json slots() const;
    // The Access-Control-Allow-Origin value for the request's Origin; empty: none.
    std::string allowed_origin(const httplib::Request &req) const;
};

std::string HttpServer::Impl::allowed_origin(const httplib::Request &req) const {
    const std::string origin = req.get_header_value("Origin");
    for (const std::string &o : options.cors_origins) {
        if (o == "*") return "*";
        if (!origin.empty() && o == origin) return origin;
    }
    return {};
}

bool HttpServer::Impl::authorized(const httplib::Request &req) const {
    if (options.api_key.empty()) return true;
    return req.get_header_value("Authorization") == "Bearer " + options.api_key;
}

void HttpServer::Impl::routes() {
    const size_t n_workers = size_t(options.n_parallel + options.max_queue + 4);
    http.new_task_queue = [n_workers] { return new httplib::ThreadPool(n_workers); };
    http.set_payload_max_length(options.max_body_bytes);
    // httplib's default of 5 requests a connection makes clients reconnect for nothing. The
    // keep-alive time is the connection loop's; httplib announces it (Keep-Alive: timeout=S).
    http.set_keep_alive_max_count(1000);
    http.set_keep_alive_timeout(options.keep_alive_seconds);
    http.set_pre_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
        // A browser's CORS preflight carries no credentials: answered before the key check.
        if (req.method == "OPTIONS" && !options.cors_origins.empty()) {
            const std::string origin = allowed_origin(req);
            res.status = origin.empty() ? 403 : 204;
            if (!origin.empty()) {
                res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
                res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
                res.set_header("Access-Control-Max-Age", "86400");
            }
            return httplib::Server::HandlerResponse::Handled;
        }
        // The chat page holds nothing: it asks for the key itself (its settings).
        if (req.path == "/health" || (req.path == "/" && options.webui) || authorized(req))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, 401, "a valid API key is required (Authorization: Bearer KEY)");
        return httplib::Server::HandlerResponse::Handled;
    });
    http.set_post_routing_handler([this](const httplib::Request &req, httplib::Response &res) {
        const std::string origin = allowed_origin(req);
        if (origin.empty()) return;
        res.set_header("Access-Control-Allow-Origin", origin);
        if (origin != "*") res.set_header("Vary", "Origin");
    });
    http.set_error_handler([](const httplib::Request &req, httplib::Response &res) {
        if (!res.body.empty()) return;
        if (res.status == 404) {
            send_error(res, 404, fmt::format("no route {} {}", req.method, req.path));
        } else if (res.status == 413) {
            send_error(res, 413, "the request body is over the size limit");
        } else {
            send_error(res, res.status, fmt::format("HTTP {}", res.status));
        }
    });
    if (options.webui) {
        http.Get("/", [](const httplib::Request &, httplib::Response &res) {
            res.set_content(kChatPage.data(), kChatPage.size(), "text/html; charset=utf-8");
        });
    }
    http.Get("/health", [this](const httplib::Request &, httplib::Response &res) {
        if (draining) return send_json(res, 503, {{"status", "shutting down"}});
        if (!ready) return send_json(res, 503, {{"status", "loading model"}});
        send_json(res, 200, {{"status", "ok"}});
    });
    auto when_ready = [this](auto handler) {
        return [this, handler](const httplib::Request &req, httplib::Response &res) {
            if (draining) return send_error(res, 503, "the server is shutting down");
            if (!ready) return send_error(res, 503, "the model is still loading");
            try {
                handler(req, res);
            } catch (const RequestError &e) {
                send_error(res, e.status(), e.what(), e.param());
            } catch (const Error &e) {
                send_error(res, 400, e.what());
            } catch (const nlohmann::json::exception &e) {  // a field of an unexpected type
                send_error(res, 400, e.what());
            }
        };
    };
    http.Get("/v1/models", when_ready([this](const httplib::Request &, httplib::Response &res) {
                 send_json(res, 200,
                           {{"object", "list"},
                            {"data", json::array({{{"id", model_name},
                                                   {"object", "model"},
                                                   {"created", unix_time()},
                                                   {"owned_by", "loom"}}})}});
             }));
    http.Post("/v1/completions",
              when_ready([this](const auto &req, auto &res) { completions(req, res, false); }));
    http.Post("/v1/chat/completions",
              when_ready([this](const auto &req, auto &res) { completions(req, res, true); }));
    // [0-9], not \d: Debian's cpp-httplib 0.11 does not match \d in a route.
    http.Post("/slots/([0-9]{1,9})",
              when_ready([this](const auto &req, auto &res) { slot_action(req, res); }));
    http.Post("/tokenize", when_ready([this](const auto &req, auto &res) { tokenize(req, res); }));
    http.Post("/detokenize",
              when_ready([this](const auto &req, auto &res) { detokenize(req, res); }));
    http.Get("/props", when_ready([this](const httplib::Request &, httplib::Response &res) {
                 send_json(res, 200, props());
             }));
    http.Get("/slots", when_ready([this](const httplib::Request &, httplib::Response &res) {
                 if (!options.expose_slots) {
                     return send_error(res, 501,
                                       "GET /slots is off: start loom serve with --slots");
                 }
                 send_json(res, 200, slots());
             }));
    http.Post("/apply-template",
              when_ready([this](const httplib::Request &req, httplib::Response &res) {
                  parse_completion_request(parse_json_body(req.body), true);  // checks messages
                  send_json(res, 200, {{"prompt", chat_prompt_text(*chat, req.body)}});
              }));
    for (const char *path : {"/v1/embeddings", "/embeddings"}) {
        http.Post(path, when_ready([this](const httplib::Request &req, httplib::Response &res) {
                      if (embedder == nullptr) {
                          return send_error(res, 501,
                                            fmt::format("{} needs an embedding model; {} "
                                                        "generates text",
                                                        req.path, model_name));
                      }
                      embeddings(req, res);
                  }));
    }
    for (const char *path : {"/v1/rerank", "/rerank", "/v1/reranking"}) {
        http.Post(path, when_ready([this](const httplib::Request &req, httplib::Response &res) {
                      if (embedder == nullptr || embedder->n_scores() == 0) {
                          return send_error(res, 501,
                                            fmt::format("{} needs a reranking model (a "
                                                        "classifier head, pooling rank); {} is "
                                                        "not one",
                                                        req.path, model_name));
                      }
                      rerank(req, res);
                  }));
    }
    http.Get("/metrics", when_ready([this](const httplib::Request &, httplib::Response &res) {
                 res.set_content(prometheus_metrics(scheduler->metrics()),
                                 "text/plain; version=0.0.4");
             }));
}

void HttpServer::Impl::tokenize(const httplib::Request &req, httplib::Response &res) {
    const json body = parse_json_body(req.body);
    if (!body.is_object() || !body.contains("content") || !body["content"].is_string()) {
        throw RequestError(400, "content", "'content' must be a string");
    }
    bool add_special = false, parse_special = true;
    read_bool(body, "add_special", add_special);
    read_bool(body, "parse_special", parse_special);
    send_json(res, 200,
              {{"tokens", model->vocab().tokenize(body["content"].get<std::string>(), add_special,
                                                  parse_special)}});
}

void HttpServer::Impl::detokenize(const httplib::Request &req, httplib::Response &res) {
    const json body = parse_json_body(req.body);
    if (!body.is_object() || !body.contains("tokens") || !body["tokens"].is_array()) {
        throw RequestError(400, "tokens", "'tokens' must be an array of token ids");
    }
    std::vector<int32_t> ids;
    const int64_t n_vocab = model->hparams().n_vocab;
    for (const auto &t : body["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab) {
            throw RequestError(400, "tokens",
                               fmt::format("'tokens' must hold ids in 0..{}", n_vocab - 1));
        }
        ids.push_back(t.get<int32_t>());
    }
    send_json(res, 200, {{"content", model->vocab().detokenize(ids, false)}});
}

void HttpServer::Impl::embeddings(const httplib::Request &req, httplib::Response &res) {
    const engine::HParams &hp = model->hparams();
    const engine::Pooling pooling = options.pooling.value_or(hp.pooling);
    if (pooling == engine::Pooling::none || pooling == engine::Pooling::rank) {
        throw RequestError(501, "",
                           fmt::format("{} pools its tokens as '{}', which gives no one vector a "
                                       "text: /v1/embeddings needs mean, cls or last pooling "
                                       "(loom serve --pooling)",
                                       model_name, engine::pooling_name(pooling)));
    }
    const EmbeddingRequest request = parse_embedding_request(
        parse_json_body(req.body), model->vocab(), hp.n_embd, embedder->options().n_batch);
    std::vector<std::vector<float>> vectors;
    int64_t n_tokens = 0;
    {
        const InFlight counted(embeddings_in_flight);
        std::lock_guard lock(embed_mutex);
        for (auto &text : engine::embed_sequences(*embedder, request.inputs, pooling, true)) {
            vectors.push_back(std::move(text.front()));
        }
    }
    for (const auto &input : request.inputs) n_tokens += int64_t(input.size());
    send_json(res, 200, embeddings_json(vectors, request.base64, model_name, n_tokens));
}

void HttpServer::Impl::rerank(const httplib::Request &req, httplib::Response &res) {
    const RerankRequest request =
        parse_rerank_request(parse_json_body(req.body), model->vocab(),
                             engine::rerank_prompt(*model), embedder->options().n_batch);
    std::vector<float> scores;
    {
        const InFlight counted(embeddings_in_flight);
        std::lock_guard lock(embed_mutex);
        for (const auto &pair :
             engine::embed_sequences(*embedder, request.pairs, engine::Pooling::rank, false)) {
            scores.push_back(pair.front().front());  // the head's first output: relevance
        }
    }
    send_json(res, 200, rerank_json(request, scores, model_name));
}

void HttpServer::Impl::completions(const httplib::Request &req, httplib::Response &res, bool chat) {
    if (embedder != nullptr) {
        throw RequestError(501, "",
                           fmt::format("{} is an embedding model: it gives embeddings (POST "
                                       "/v1/embeddings), not text",
                                       model_name));
    }
    const CompletionRequest request = parse_completion_request(parse_json_body(req.body), chat);
    const std::string chat_text = chat ? chat_prompt_text(*this->chat, req.body) : std::string();
    // Tool calls: parsed from the answer in the form the template teaches; a required call (or a
    // named function) constrains the answer to one.
    const ToolCallForm form = tool_call_form(this->chat->jinja_source());
    const bool parse_calls = chat && !request.tools.empty() && request.tool_choice != "none" &&
                             form != ToolCallForm::none;
    std::optional<engine::grammar::Grammar> grammar = output_grammar(req.body);
    if (chat && (request.tool_choice == "required" || request.tool_choice == "function")) {
        if (grammar) {
            throw RequestError(400, "tool_choice",
                               "a required tool call and response_format / json_schema / "
                               "grammar: give one constraint");
        }
        try {
            grammar = tool_call_grammar(form, request.tools, request.tool_choice_name,
                                        prompt_opens_reasoning(chat_text));
        } catch (const Error &e) {
            throw RequestError(400, "tool_choice", e.what());
        }
    }
    Job job{.prompt = chat ? this->chat->tokenize(model->vocab(), chat_text)
                           : model->vocab().tokenize(request.prompt, true, true),
            .sampling = request.sampling,
            .max_tokens = options.n_predict < 0 || (request.max_tokens >= 0 &&
                                                    request.max_tokens < options.n_predict)
                              ? request.max_tokens
                              : options.n_predict,
            .stop = request.stop,
            .top_logprobs = request.logprobs ? request.top_logprobs : -1,
            .grammar = std::move(grammar),
            // gpt-oss's channels are read from every chat answer, calls or not.
            .shown_special = parse_calls || (chat && form == ToolCallForm::harmony)
                                 ? marker_tokens(model->vocab(), form)
                                 : std::vector<int32_t>(),
            .cache_prompt = request.cache_prompt};
    job.sampling.logit_bias = resolve_logit_bias(request.logit_bias, model->vocab());
    if (job.prompt.empty()) throw RequestError(400, "prompt", "the prompt has no tokens");
    if (int64_t(job.prompt.size()) >= scheduler->slot_context()) {
        throw RequestError(400, chat ? "messages" : "prompt",
                           fmt::format("the prompt has {} tokens; a slot holds {} (--ctx-size {} "
                                       "over --parallel {}), and at least one must be left to "
                                       "generate",
                                       job.prompt.size(), scheduler->slot_context(), options.n_ctx,
                                       options.n_parallel));
    }
    // `n` answers: as many jobs, on as many slots as are free (the rest queued), each its own
    // draws (a fixed seed counts up from the request's).
    const auto choices = std::make_shared<std::vector<Choice>>();
    const Completion base{.id = random_id(chat ? "chatcmpl" : "cmpl"),
                          .created = unix_time(),
                          .model = model_name,
                          .chat = chat,
                          .logprobs = request.logprobs};
    for (int i = 0; i < request.n; ++i) {
        Job copy = job;
        if (copy.sampling.seed != engine::kRandomSeed) copy.sampling.seed += uint64_t(i);
        std::shared_ptr<Task> task = scheduler->submit(std::move(copy));
        if (task == nullptr) {
            for (Choice &c : *choices) c.task->cancel();
            res.set_header("Retry-After", "1");
            return send_error(res, 503, "every slot is busy and the queue is full; retry later");
        }
        Completion completion = base;
        completion.index = i;
        choices->push_back(Choice{
            .task = std::move(task),
            .answer = AnswerParts(
                chat && request.split_reasoning.value_or(options.reasoning_format == "deepseek"),
                prompt_opens_reasoning(chat_text), chat ? form : ToolCallForm::none, parse_calls,
                request.tools),
            .completion = std::move(completion)});
    }
    // A client that hangs up cancels its tasks (freeing their slots at the next step) whether
    // they wait in the queue, their prompts are decoded, or they are generating.
    auto client = std::make_shared<ClientConnection>(http.client_socket(req));
    const auto cancel_all = [choices] {
        for (Choice &c : *choices) c.task->cancel();
    };
    // The next event of any choice not yet done, the choices taken in turn; false when none
    // came within the poll.
    const auto next_event = [choices](Event &e) -> Choice * {
        const auto wait = kPoll / int(choices->size());
        for (Choice &c : *choices) {
            if (!c.done && c.task->next(e, wait)) {
                c.done = e.done;
                return &c;
            }
        }
        return nullptr;
    };
    const auto all_done = [choices] {
        return std::all_of(choices->begin(), choices->end(),
                           [](const Choice &c) { return c.done; });
    };
    if (!request.stream) {
        while (!all_done()) {
            if (client->closed()) return cancel_all();
            Event e;
            Choice *c = next_event(e);
            if (c == nullptr) continue;
            if (!e.error.empty()) {
                cancel_all();
                return send_error(res, 500, e.error);
            }
            Completion &completion = c->completion;
            const AnswerParts::Piece piece = c->answer.take(e.text, e.done);
            completion.text += piece.content;
            completion.reasoning += piece.reasoning;
            completion.tool_calls.insert(completion.tool_calls.end(), piece.calls.begin(),
                                         piece.calls.end());
            completion.chosen.insert(completion.chosen.end(), e.chosen.begin(), e.chosen.end());
            completion.top.insert(completion.top.end(), e.top.begin(), e.top.end());
            if (e.done) {
                completion.finish_reason =
                    completion.tool_calls.empty() ? e.finish_reason : "tool_calls";
                completion.counts = e.counts;
            }
        }
        nlohmann::json out = completion_json(choices->front().completion, model->vocab());
        for (size_t i = 1; i < choices->size(); ++i) {
            const Completion &c = (*choices)[i].completion;
            out["choices"].push_back(completion_json(c, model->vocab())["choices"][0]);
        }
        out["usage"] = usage_json(total_usage(*choices).counts);
        return send_json(res, 200, out);
    }
    // Server-sent events, one per event of a task, then [DONE]. A failed write also means the
    // client went away.
    const bool include_usage = request.include_usage;
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, choices, client, include_usage, cancel_all, next_event, all_done](
            size_t, httplib::DataSink &sink) {
            while (!all_done()) {
                if (client->closed()) return cancel_all(), false;
                Event e;
                Choice *c = next_event(e);
                if (c == nullptr) continue;
                if (!e.error.empty()) {
                    const std::string data = "data: " + to_text(error_json(500, e.error)) + "\n\n";
                    sink.write(data.data(), data.size());
                    cancel_all();
                    break;
                }
                Completion &completion = c->completion;
                AnswerParts::Piece piece = c->answer.take(e.text, e.done);
                const size_t first_index = completion.tool_calls.size();
                completion.tool_calls.insert(completion.tool_calls.end(), piece.calls.begin(),
                                             piece.calls.end());
                if (e.done && !completion.tool_calls.empty()) e.finish_reason = "tool_calls";
                e.text = std::move(piece.content);
                const nlohmann::json call_delta = tool_calls_json(piece.calls, first_index, true);
                const std::string data = "data: " +
                                         to_text(chunk_json(completion, e, c->first, model->vocab(),
                                                            piece.reasoning, call_delta)) +
                                         "\n\n";
                completion.text += e.text;
                c->first = false;
                if (e.done) {
                    completion.counts = e.counts;
                }
                if (!sink.write(data.data(), data.size())) return cancel_all(), false;
            }
            // stream_options.include_usage: OpenAI's chunk of no choices, after the last.
            if (include_usage && all_done()) {
                Completion totals = total_usage(*choices);
                const std::string usage = "data: " + to_text(usage_chunk_json(totals)) + "\n\n";
                if (!sink.write(usage.data(), usage.size())) return false;
            }
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
        },
        [cancel_all](bool) { cancel_all(); });  // a no-op once the tasks have finished
}

HttpServer::HttpServer(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpServer::~HttpServer() = default;

void HttpServer::run(const std::function<void(int port)> &on_listening) {
    Impl &s = *impl_;
    s.routes();
    int port = s.options.port;
    if (port == 0) {
        port = s.http.bind_to_any_port(s.options.host);
        if (port <= 0) fail("serve", "cannot listen on {}", s.options.host);
    } else if (!s.http.bind_to_port(s.options.host, port)) {
        fail("serve", "cannot listen on {}:{} (in use, or not an address of this machine)",
             s.options.host, port);
    }
    std::atomic<bool> listening_ended{false};
    std::thread listener([&s, &listening_ended] {
        s.http.listen_after_bind();
        listening_ended = true;
    });
    // httplib's stop() does nothing before the listener has started, so it is repeated until
    // the listener is gone; stop() of this class only asks for it (a signal's thread may call
    // it while the model is loading).
    const auto end_listening = [&] {
        while (!listening_ended) {
            s.http.stop();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        listener.join();
    };
    on_listening(port);
    try {
        s.model = engine::Model::load(s.options.model_path);
        s.model_name = std::filesystem::path(s.options.model_path).filename().string();
        // An unknown --chat-template or a template file that does not parse is the operator's
        // mistake: refuse to start. A model without a usable template of its own gets chatml.
        s.chat = engine::ChatFormatter::choose(s.model->file().metadata(), s.model->vocab(),
                                               s.options.chat_format);
        if (!s.chat->warning().empty()) fmt::print(stderr, "loom serve: {}\n", s.chat->warning());
        fmt::print(stderr, "loom serve: chat template: {}\n", s.chat->description());
        s.scheduler = std::make_unique<SlotScheduler>(
            *s.model, SlotSchedulerOptions{.n_parallel = s.options.n_parallel,
                                           .n_ctx = s.options.n_ctx,
                                           .n_batch = s.options.n_batch,
                                           .n_threads = s.options.n_threads,
                                           .flash_attn = s.options.flash_attn,
                                           .type_k = s.options.type_k,
                                           .type_v = s.options.type_v,
                                           .max_queue = s.options.max_queue,
                                           .context_shift = s.options.context_shift,
                                           .n_keep = s.options.n_keep});
        fmt::print(stderr, "loom serve: KV cache {}\n", s.scheduler->memory_summary());
        if (!s.model->arch().lm_head) {
            // An embedding model: texts of at most the model's context, many per decode.
            const int64_t n = std::min(s.options.n_batch, s.model->hparams().n_ctx_train);
            s.embedder = std::make_unique<engine::Context>(
                *s.model, engine::ContextOptions{.n_ctx = n,
                                                 .n_batch = n,
                                                 .n_ubatch = n,
                                                 .n_threads = s.options.n_threads,
                                                 .n_seq_max = 64,
                                                 .embeddings = true});
            fmt::print(stderr, "loom serve: an embedding model: POST {}\n",
                       s.embedder->n_scores() > 0 ? "/v1/rerank" : "/v1/embeddings");
        }
    } catch (...) {
        end_listening();
        throw;
    }
    s.ready = true;
    while (!s.stop_requested && !listening_ended) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Draining: new requests get 503 while those in flight (queued ones too) have the shutdown
    // timeout to finish.
    s.draining = true;
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(s.options.shutdown_timeout_seconds);
    const auto busy = [&s] {
        const SlotSchedulerMetrics m = s.scheduler->metrics();
        return m.requests_processing + m.requests_queued > 0 || s.embeddings_in_flight > 0;
    };
    while (busy() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (busy()) fmt::print(stderr, "loom serve: shutdown timeout: cancelling what is left\n");
    // The scheduler first: every request still in flight gets its last event and its handler
    // returns, which the HTTP server waits for.
    s.scheduler->shutdown();
    const SlotSchedulerMetrics m = s.scheduler->metrics();
    fmt::print(stderr, "loom serve: {} requests, {} prompt tokens, {} generated\n",
               m.requests_total, m.prompt_tokens, m.generated_tokens);
    end_listening();
    s.ready = false;
    s.scheduler.reset();
}

void HttpServer::stop() {
    impl_->stop_requested = true;
}

// llama-server's shape, the fields Loom has: the settings a request starts from, the slots,
// the model and its chat template.
json HttpServer::Impl::props() const {
    const engine::SamplingParams d;
    const engine::Vocab &vocab = model->vocab();
    auto piece = [&](int32_t id) {
        return id >= 0 && id < vocab.n_tokens() ? vocab.token_text(id) : std::string();
    };
    return {{"default_generation_settings",
             {{"n_ctx", scheduler->slot_context()},
              {"params",
               {{"temperature", d.temperature},
                {"top_k", d.top_k},
                {"top_p", d.top_p},
                {"min_p", d.min_p},
                {"typical_p", d.typical_p},
                {"repeat_penalty", d.repeat_penalty},
                {"presence_penalty", d.presence_penalty},
                {"frequency_penalty", d.frequency_penalty},
                {"n_predict", options.n_predict},
                {"cache_prompt", true}}}}},
            {"total_slots", options.n_parallel},
            {"model_path", options.model_path},
            {"model_alias", model_name},
            {"chat_template", chat->jinja_source()},
            {"chat_template_description", chat->description()},
            {"bos_token", piece(vocab.bos())},
            {"eos_token", piece(vocab.eos())},
            {"n_vocab", vocab.n_tokens()}};
}

json HttpServer::Impl::slots() const {
    json out = json::array();
    for (const SlotState &s : scheduler->slots()) {
        out.push_back({{"id", s.id},
                       {"n_ctx", s.n_ctx},
                       {"is_processing", s.busy},
                       {"n_cached_tokens", s.n_cells},
                       {"n_prompt_tokens", s.n_prompt},
                       {"n_prompt_tokens_processed", s.n_prompt_done},
                       {"n_decoded", s.n_generated}});
    }
    return out;
}

void HttpServer::Impl::slot_action(const httplib::Request &req, httplib::Response &res) {
    if (options.slot_save_path.empty()) {
        return send_error(res, 501, "slot actions are off: start loom serve with --slot-save-path");
    }
    const SlotAction action =
        parse_slot_action(std::stoi(req.matches[1].str()), req.get_param_value("action"), req.body,
                          options.slot_save_path);
    const SlotActionResult result = scheduler->slot_action(action);
    if (!result.error.empty()) return send_error(res, result.status, result.error);
    send_json(res, 200, slot_action_json(action, result));
}

}  // namespace loom::serve
