#include "tools/loom/serve/client_connection.h"

#include <poll.h>

namespace loom::serve {

bool ClientConnection::closed() const {
    if (fd_ < 0) return false;
    // POLLRDHUP: the peer shut its sending side. HTTP clients do that only when they leave (a
    // pipelined next request would make the socket readable, not hung up).
    pollfd entry{.fd = fd_, .events = POLLRDHUP, .revents = 0};
    if (poll(&entry, 1, 0) < 0) return false;
    return (entry.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace loom::serve
