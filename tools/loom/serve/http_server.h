#pragma once
// `loom serve`'s HTTP side: OpenAI's completion and chat endpoints over the scheduler, plus
// health, models, tokenize / detokenize, Prometheus metrics, llama-server's /props, /slots and
// /apply-template, and CORS for the origins given. Errors come in OpenAI's shape:
// 400 for a bad request, 401 without the API key, 404 for an unknown route, 408 for a request
// that arrives too slowly, 413 for a body over the limit, 503 while loading or when every slot and
// the queue are full. POST /slots/{id} saves, restores or erases an idle slot's cells (409 while it
// is busy, 501 without
// --slot-save-path). /v1/embeddings and /v1/rerank answer 501: no embedding model is served.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "loom/tensor.h"

namespace loom::serve {

struct ServeOptions {
    std::string model_path;
    std::string host = "127.0.0.1";
    int port = 8080;  // 0: any free port (printed when listening)
    int n_parallel = 4;
    int64_t n_ctx = 4096;  // all slots together
    int64_t n_batch = 512;
    int n_threads = 0;
    std::string api_key;                   // empty: no authentication
    engine::ChatFormatChoice chat_format;  // both empty: the GGUF's template
    bool flash_attn = false;
    DType type_k = DType::F16, type_v = DType::F16;
    size_t max_body_bytes = size_t(1) << 20;
    int max_queue = 64;
    bool context_shift = false;  // shift a full slot's context instead of ending with "length"
    int32_t n_keep = 0;          // prompt tokens (after BOS) a shift keeps
    std::string slot_save_path;  // the folder for slot files; empty: /slots answers 501
    bool expose_slots = false;   // GET /slots; off: 501
    // "deepseek": a chat answer's <think> block goes to reasoning_content (serve/reasoning.h);
    // "none": the answer as written.
    std::string reasoning_format = "deepseek";
    // Origins whose pages may call the API (CORS: preflights answered, Access-Control-Allow-
    // Origin on the answers); "*" any; empty: none, browsers' same-origin rule stands.
    std::vector<std::string> cors_origins;
    bool webui = true;  // GET / answers the chat page (serve/chat_page.h); off: 404
    // Most tokens a request generates (llama-server's -n): a larger or absent max_tokens is
    // capped to it; -1: no cap beyond the slot's context.
    int32_t n_predict = -1;
    // Seconds a connection may take to send a request's next bytes (408 past it), or to take
    // the answer's (dropped past it).
    int timeout_seconds = 600;
    // A request's head (request line and headers) must arrive within this many seconds of its
    // first byte, and its body at body_min_rate bytes a second after as long again; else 408
    // (serve/connection_loop.h). 0 rate: no rate.
    double header_timeout_seconds = 30;
    double body_min_rate = 500;
    // Seconds an idle keep-alive connection stays open. Longer than clients keep theirs (Node's
    // 4 s): a server that closes first races the client's next request on that connection.
    int keep_alive_seconds = 5;
    // After SIGINT / SIGTERM: seconds requests in flight get to finish (new ones get 503)
    // before they are cancelled.
    double shutdown_timeout_seconds = 10.0;
    // How an embedding model's /v1/embeddings pools each text; none: as its file says.
    std::optional<engine::Pooling> pooling;
};

class HttpServer {
  public:
    explicit HttpServer(ServeOptions options);
    ~HttpServer();
    // Starts listening (health answers 503 while the model loads), loads the model, then serves
    // until stop(). `on_listening` is called with the port once the socket is bound. Throws
    // loom::Error when the port cannot be bound or the model cannot be loaded.
    void run(const std::function<void(int port)> &on_listening);
    // Stops accepting; requests in flight are cancelled. Safe from another thread.
    void stop();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom::serve
