// `loom serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx-size C]
// [--threads T] [--api-key KEY] [--flash-attn on|off|auto] [--kv-type f16|f32]
// [--chat-template NAME | --chat-template-file T.jinja] [--max-queue Q] [--slots]
// [--cors ORIGINS] [--reasoning-format deepseek|none]`:
// an OpenAI-compatible HTTP server (tools/loom/serve/). SIGINT or SIGTERM stops it: new
// requests get 503, those in flight have --shutdown-timeout seconds to finish (then are
// cancelled), exit code 0. SIGHUP is ignored.
#include <fmt/format.h>
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <memory>
#include <thread>

#include "loom/engine.h"
#include "tools/loom/commands.h"
#include "tools/loom/model_options.h"
#include "tools/loom/serve/http_server.h"

namespace loom::tools {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
    g_stop = true;
}

void serve(const serve::ServeOptions &options) {
    // Request bodies (up to --max-body, 1 MiB) are allocated and freed on many HTTP threads.
    // glibc raises its mmap threshold to the largest block freed (up to 32 MiB), after which such
    // blocks come from the threads' arenas and stay there; a fixed threshold keeps them mapped
    // apart and returned when freed.
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    serve::HttpServer server(options);
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    // A closed terminal (or a supervisor's log rotation) must not end the requests in flight.
    std::signal(SIGHUP, SIG_IGN);
    std::atomic<bool> done{false};
    // A signal handler may only set a flag: this thread turns it into stop().
    std::thread watcher([&] {
        while (!done) {
            if (g_stop) {
                server.stop();
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    try {
        server.run([&](int port) {
            fmt::print(stderr, "loom serve: listening on http://{}:{}\n", options.host, port);
        });
    } catch (...) {
        done = true;
        watcher.join();
        throw;
    }
    done = true;
    watcher.join();
    fmt::print(stderr, "loom serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App &app, int &exit_code) {
    CLI::App *command = app.add_subcommand("serve", "an OpenAI-compatible HTTP server");
    auto o = std::make_shared<serve::ServeOptions>();
    auto model = std::make_shared<ModelOptions>();
    add_model_options(*command, *model, "f16");
    command->add_option("--host", o->host, "address to listen on")->capture_default_str();
    command->add_option("--port", o->port, "port (0: any free one)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    command->add_option("--parallel", o->n_parallel, "requests decoded at once (slots)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    command->add_option("-c,--ctx-size", o->n_ctx, "KV cache cells, shared out to the slots")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    command->add_option("--api-key", o->api_key, "require Authorization: Bearer KEY");
    command
        ->add_option("--max-queue,--queue", o->max_queue,
                     "requests waiting for a slot before new ones get 503")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    command
        ->add_option("--slot-save-path", o->slot_save_path,
                     "folder for POST /slots/{id}?action=save|restore files (off without it)")
        ->check(CLI::ExistingDirectory);
    command->add_flag(
        "--no-webui", [o](int64_t) { o->webui = false; }, "no chat page at / (404 there)");
    command->add_flag("--slots", o->expose_slots,
                      "answer GET /slots with each slot's state (off: 501, as it shows the load)");
    command
        ->add_option("--reasoning-format", o->reasoning_format,
                     "deepseek: a chat answer's <think> block as reasoning_content; none: as "
                     "written")
        ->capture_default_str()
        ->check(CLI::IsMember({"deepseek", "none"}));
    command
        ->add_option("--cors", o->cors_origins,
                     "let web pages from these origins call the API (comma-separated, or *)")
        ->delimiter(',');
    command
        ->add_option("-n,--n-predict", o->n_predict,
                     "most tokens a request generates; a larger max_tokens is capped (-1: none)")
        ->capture_default_str()
        ->check(CLI::Range(-1, 1 << 30));
    command
        ->add_option("--timeout", o->timeout_seconds,
                     "seconds a client may take to send its request's next bytes or read the "
                     "answer's")
        ->capture_default_str()
        ->check(CLI::Range(1, 86400));
    command
        ->add_option("--header-timeout", o->header_timeout_seconds,
                     "seconds a request's head may take to arrive (408 past it); also the body's "
                     "allowance before --body-min-rate counts")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 86400.0));
    command
        ->add_option("--body-min-rate", o->body_min_rate,
                     "bytes a second a request's body must average after that (408 below it; 0: "
                     "no rate)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e12));
    command
        ->add_option("--keep-alive", o->keep_alive_seconds,
                     "seconds an idle keep-alive connection stays open")
        ->capture_default_str()
        ->check(CLI::Range(1, 86400));
    command
        ->add_option("--shutdown-timeout", o->shutdown_timeout_seconds,
                     "after SIGINT / SIGTERM, seconds requests in flight get to finish")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 86400.0));
    auto pooling = std::make_shared<std::string>();
    command
        ->add_option("--pooling", *pooling,
                     "an embedding model's pooling for /v1/embeddings: mean, cls or last "
                     "(default: the file's)")
        ->check(CLI::IsMember({"mean", "cls", "last"}));
    add_context_shift_options(*command, o->context_shift, o->n_keep,
                              "ending the request with finish_reason \"length\"");
    add_chat_template_options(*command, o->chat_format);
    command->callback([o, model, pooling, &exit_code] {
        if (!pooling->empty()) o->pooling = engine::pooling_from_name(*pooling);
        const engine::ContextOptions context = context_options(*model);
        o->model_path = model->path;
        o->n_threads = context.n_threads;
        o->flash_attn = context.flash_attn;
        o->type_k = context.type_k;
        o->type_v = context.type_v;
        serve(*o);
        exit_code = 0;
    });
}

}  // namespace loom::tools
