#pragma once
// Whether the client of a request is still connected, asked while its answer is being made.
//
// cpp-httplib (0.11, Debian's) gives a handler no way to see that its client hung up: a
// non-streamed request would only notice when the answer is written, a streamed one at its
// first failed write, so not while it waits in the queue or its prompt is decoded. The
// connection loop (connection_loop.h) tells which socket a request came on; this asks the
// kernel whether the peer has closed it.

namespace loom::serve {

class ClientConnection {
  public:
    // `fd`: the request's socket, open while its handler runs; -1 when unknown.
    explicit ClientConnection(int fd) : fd_(fd) {}

    // True once the client has closed its end (or the connection failed). A connection whose
    // socket is unknown is never reported closed: a failed write still ends it.
    bool closed() const;

  private:
    int fd_ = -1;
};

}  // namespace loom::serve
