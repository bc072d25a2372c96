#pragma once
// A SIGINT handler installed for the lifetime of an object, the previous one restored after.
#include <csignal>

namespace loom::tools {

class ScopedSigint {
  public:
    // restart: system calls interrupted by the signal resume (SA_RESTART) instead of failing.
    ScopedSigint(void (*handler)(int), bool restart) {
        struct sigaction action = {};
        action.sa_handler = handler;
        action.sa_flags = restart ? SA_RESTART : 0;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &previous_);
    }
    ~ScopedSigint() { sigaction(SIGINT, &previous_, nullptr); }
    ScopedSigint(const ScopedSigint &) = delete;
    ScopedSigint &operator=(const ScopedSigint &) = delete;

  private:
    struct sigaction previous_ = {};
};

}  // namespace loom::tools
